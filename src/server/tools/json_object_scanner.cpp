// Incremental scan of a JSON object's text: its end and the UTF-8 boundaries it may be cut at.
#include "server/tools/json_object_scanner.h"

namespace cai::server {

size_t JsonObjectScanner::feed(std::string_view text) {
  if (done_) return 0;
  for (size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (in_string_) {
      if (escaped_)
        escaped_ = false;
      else if (c == '\\')
        escaped_ = true;
      else if (c == '"')
        in_string_ = false;
    } else if (c == '"') {
      in_string_ = true;
    } else if (c == '{' || c == '[') {
      ++depth_;
    } else if ((c == '}' || c == ']') && --depth_ == 0) {
      done_ = true;
      return i + 1;
    }
  }
  return text.size();
}

size_t utf8_prefix_end(std::string_view text) {
  // Step back over up to three continuation bytes (10xxxxxx) to the byte that leads the last sequence.
  size_t lead = text.size();
  while (lead > 0 && text.size() - lead < 3 && (static_cast<unsigned char>(text[lead - 1]) & 0xC0) == 0x80) --lead;
  if (lead == 0) return text.size();
  const auto b = static_cast<unsigned char>(text[--lead]);
  const size_t length = (b & 0xE0) == 0xC0 ? 2 : (b & 0xF0) == 0xE0 ? 3 : (b & 0xF8) == 0xF0 ? 4 : 1;
  return lead + length > text.size() ? lead : text.size();
}

}  // namespace cai::server
