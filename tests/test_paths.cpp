// Test data and binary locations, baked in at configure time.
#include "test_paths.h"

#include <fstream>
#include <sstream>
#include <stdexcept>

namespace cai::test {

std::string data_path(const std::string& rel) { return std::string(CAI_SOURCE_DIR) + "/tests/data/" + rel; }
std::string binary_path(const std::string& name) { return std::string(CAI_BINARY_DIR) + "/" + name; }

std::string read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw std::runtime_error("cannot open " + path);
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

}  // namespace cai::test
