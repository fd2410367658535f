// Reading a whole JSON file (configs, indexes, presets) with errors that name the file.
#pragma once

#include <nlohmann/json.hpp>

#include <string>

#include "core/status.h"

namespace cai {

// io_error when the file cannot be opened, corrupt when it is not valid JSON.
Result<nlohmann::json> read_json_file(const std::string& path);

}  // namespace cai
