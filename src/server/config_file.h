// `cai serve` config file: a flat YAML mapping of option names to values, and byte sizes such as "512MiB".
#pragma once

#include <cstddef>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "core/status.h"

namespace cai::server {

// One option from the file: its name ('_' written as '-') and its value(s) as text (a YAML sequence gives several).
struct ConfigEntry {
  std::string name;
  std::vector<std::string> values;
};

// Parses YAML text whose top level is a mapping of scalars or sequences of scalars (null values are skipped).
// Anything else (nested mappings, a non-mapping document, bad YAML) → invalid_argument naming the key or line.
Result<std::vector<ConfigEntry>> parse_config_yaml(std::string_view text);

// "268435456", "512MiB", "512M", "4GiB", "64k" → bytes (binary units). Errors name the text.
Result<size_t> parse_byte_size(std::string_view text);

}  // namespace cai::server
