// `cai serve` config file: YAML (yaml-cpp) → option entries; byte-size parsing for --kv-memory.
#include "server/config_file.h"

#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <cctype>
#include <charconv>
#include <limits>

namespace cai::server {

namespace {

std::string option_name(std::string key) {
  std::replace(key.begin(), key.end(), '_', '-');
  return key;
}

}  // namespace

Result<std::vector<ConfigEntry>> parse_config_yaml(std::string_view text) {
  YAML::Node root;
  try {
    root = YAML::Load(std::string(text));
  } catch (const YAML::Exception& e) {
    return invalid_argument("config file is not valid YAML: {}", e.what());
  }
  std::vector<ConfigEntry> entries;
  if (root.IsNull()) return entries;
  if (!root.IsMap()) return invalid_argument("config file must be a mapping of option names to values");
  for (const auto& kv : root) {
    if (!kv.first.IsScalar()) return invalid_argument("config file keys must be option names");
    ConfigEntry entry{option_name(kv.first.Scalar()), {}};
    const YAML::Node& v = kv.second;
    if (v.IsNull()) continue;
    if (v.IsScalar()) {
      entry.values.push_back(v.Scalar());
    } else if (v.IsSequence()) {
      for (const auto& item : v) {
        if (!item.IsScalar())
          return invalid_argument("config option '{}': list items must be plain values", entry.name);
        entry.values.push_back(item.Scalar());
      }
    } else {
      return invalid_argument("config option '{}' must be a value or a list of values", entry.name);
    }
    entries.push_back(std::move(entry));
  }
  return entries;
}

Result<size_t> parse_byte_size(std::string_view text) {
  uint64_t n = 0;
  const char* end = text.data() + text.size();
  auto [p, ec] = std::from_chars(text.data(), end, n);
  if (ec != std::errc() || p == text.data()) return invalid_argument("'{}' is not a byte size (e.g. 512MiB)", text);
  std::string unit(p, end);
  for (char& c : unit) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  int shift = -1;
  if (unit.empty() || unit == "b")
    shift = 0;
  else if (unit == "k" || unit == "kib" || unit == "kb")
    shift = 10;
  else if (unit == "m" || unit == "mib" || unit == "mb")
    shift = 20;
  else if (unit == "g" || unit == "gib" || unit == "gb")
    shift = 30;
  else if (unit == "t" || unit == "tib" || unit == "tb")
    shift = 40;
  if (shift < 0) return invalid_argument("'{}': unknown size unit '{}' (use B, KiB, MiB, GiB or TiB)", text, unit);
  if (n > (std::numeric_limits<size_t>::max() >> shift)) return invalid_argument("'{}' is too large", text);
  return static_cast<size_t>(n) << shift;
}

}  // namespace cai::server
