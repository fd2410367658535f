// read_json_file: parse without exceptions; the caller gets a Status naming the path.
#include "core/json_file.h"

#include <fstream>

namespace cai {

Result<nlohmann::json> read_json_file(const std::string& path) {
  std::ifstream in(path);
  if (!in) return io_error("cannot open {}", path);
  nlohmann::json j = nlohmann::json::parse(in, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded()) return corrupt("{} is not valid JSON", path);
  return j;
}

}  // namespace cai
