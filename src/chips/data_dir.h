// Where CAI finds its data folders (chip profiles, model presets): an environment variable, the installed share dir
// next to the binary, else the source tree.
#pragma once

#include <string>

namespace cai::chips {

// $<env_var> when set, else <exe dir>/../share/cai/<subdir> when that exists, else `source_dir`.
std::string find_data_dir(const char* env_var, const std::string& subdir, const std::string& source_dir);

}  // namespace cai::chips
