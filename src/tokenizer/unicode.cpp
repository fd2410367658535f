// UTF-8 helpers for the tokenizer: code point decode/encode, character splitting, lossy validation.
#include "tokenizer/unicode.h"

namespace cai::tok {
namespace {

constexpr const char kReplacement[] = "\xEF\xBF\xBD";  // U+FFFD

// Valid range of the second byte of a sequence led by `lead` (RFC 3629 table); later bytes are 80..BF.
void second_byte_range(uint8_t lead, uint8_t& lo, uint8_t& hi) {
  lo = 0x80;
  hi = 0xBF;
  if (lead == 0xE0) lo = 0xA0;
  if (lead == 0xED) hi = 0x9F;
  if (lead == 0xF0) lo = 0x90;
  if (lead == 0xF4) hi = 0x8F;
}

}  // namespace

size_t utf8_seq_len(uint8_t lead) {
  if (lead < 0x80) return 1;
  if (lead >= 0xC2 && lead <= 0xDF) return 2;
  if (lead >= 0xE0 && lead <= 0xEF) return 3;
  if (lead >= 0xF0 && lead <= 0xF4) return 4;
  return 1;
}

void append_utf8(std::string& out, uint32_t cp) {
  if (cp < 0x80) {
    out.push_back(static_cast<char>(cp));
  } else if (cp < 0x800) {
    out.push_back(static_cast<char>(0xC0 | (cp >> 6)));
    out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  } else if (cp < 0x10000) {
    out.push_back(static_cast<char>(0xE0 | (cp >> 12)));
    out.push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
    out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  } else {
    out.push_back(static_cast<char>(0xF0 | (cp >> 18)));
    out.push_back(static_cast<char>(0x80 | ((cp >> 12) & 0x3F)));
    out.push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
    out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  }
}

uint32_t next_code_point(std::string_view text, size_t& pos) {
  const auto b0 = static_cast<uint8_t>(text[pos]);
  size_t n = utf8_seq_len(b0);
  if (pos + n > text.size()) n = 1;
  uint32_t cp = n == 1 ? b0 : n == 2 ? (b0 & 0x1F) : n == 3 ? (b0 & 0x0F) : (b0 & 0x07);
  for (size_t i = 1; i < n; ++i) cp = (cp << 6) | (static_cast<uint8_t>(text[pos + i]) & 0x3F);
  pos += n;
  return cp;
}

namespace {

// At a non-ASCII lead byte: the sequence length if [pos, pos + n) is well formed, else 0 with `good` = the length
// of its longest valid prefix (1 for a bad lead byte), which may run to the end of `bytes`.
size_t well_formed_len(std::string_view bytes, size_t pos, size_t& good) {
  const auto lead = static_cast<uint8_t>(bytes[pos]);
  const size_t n = utf8_seq_len(lead);
  good = 1;
  if (n == 1) return 0;  // stray continuation byte or a byte that never starts a sequence
  uint8_t lo, hi;
  second_byte_range(lead, lo, hi);
  while (good < n && pos + good < bytes.size()) {
    const auto b = static_cast<uint8_t>(bytes[pos + good]);
    if (b < (good == 1 ? lo : 0x80) || b > (good == 1 ? hi : 0xBF)) break;
    ++good;
  }
  return good == n ? n : 0;
}

}  // namespace

size_t append_valid_utf8(std::string_view bytes, std::string& out, bool final) {
  size_t pos = 0;
  while (pos < bytes.size()) {
    if (static_cast<uint8_t>(bytes[pos]) < 0x80) {
      out.push_back(bytes[pos++]);
      continue;
    }
    size_t good = 0;
    if (const size_t n = well_formed_len(bytes, pos, good); n > 0) {
      out.append(bytes.substr(pos, n));
      pos += n;
      continue;
    }
    const bool cut_at_end = pos + good == bytes.size() && utf8_seq_len(static_cast<uint8_t>(bytes[pos])) > 1;
    if (cut_at_end && !final) return pos;  // wait for more bytes
    out += kReplacement;
    pos += good;
  }
  return pos;
}

bool is_valid_utf8(std::string_view bytes) {
  for (size_t pos = 0; pos < bytes.size();) {
    if (static_cast<uint8_t>(bytes[pos]) < 0x80) {
      ++pos;
      continue;
    }
    size_t good = 0;
    const size_t n = well_formed_len(bytes, pos, good);
    if (n == 0) return false;
    pos += n;
  }
  return true;
}

std::string to_valid_utf8(std::string_view bytes) {
  std::string out;
  out.reserve(bytes.size());
  append_valid_utf8(bytes, out, true);
  return out;
}

}  // namespace cai::tok
