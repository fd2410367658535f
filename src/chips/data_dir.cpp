// find_data_dir: environment, then the install layout (bin/cai → share/cai/<subdir>), then the source tree.
#include "chips/data_dir.h"

#include <cstdlib>
#include <filesystem>

namespace cai::chips {

std::string find_data_dir(const char* env_var, const std::string& subdir, const std::string& source_dir) {
  namespace fs = std::filesystem;
  if (const char* env = std::getenv(env_var); env && *env) return env;
  std::error_code ec;
  const fs::path exe = fs::read_symlink("/proc/self/exe", ec);
  if (!ec) {
    const fs::path installed = exe.parent_path().parent_path() / "share" / "cai" / subdir;
    if (fs::is_directory(installed, ec)) return installed.string();
  }
  return source_dir;
}

}  // namespace cai::chips
