// Ignored request fields, each logged once per process.
#include "server/ignored_fields.h"

#include <mutex>
#include <regex>
#include <set>

#include "core/log.h"

namespace cai::server {

void ignore_field(std::string_view route, const std::string& path, std::string_view why) {
  static std::mutex mu;
  static std::set<std::string> seen;
  static const std::regex index(R"(\[\d+\])");
  const std::string name = std::regex_replace(path, index, "[]");
  std::lock_guard lock(mu);
  if (seen.insert(std::string(route) + " " + name).second) CAI_LOG_INFO("{}: ignoring '{}' ({})", route, name, why);
}

}  // namespace cai::server
