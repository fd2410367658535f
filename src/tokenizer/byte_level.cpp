// GPT-2 byte-level mapping: every byte ↔ one printable code point (bytes_to_unicode), used by byte-level BPE.
#include "tokenizer/byte_level.h"

#include <array>

#include "tokenizer/unicode.h"

namespace cai::tok {
namespace {

// Bytes that keep their own code point: 0x21–0x7E, 0xA1–0xAC, 0xAE–0xFF. The other 68 take U+0100 onwards in order.
bool maps_to_itself(uint32_t b) {
  return (b >= 0x21 && b <= 0x7E) || (b >= 0xA1 && b <= 0xAC) || (b >= 0xAE && b <= 0xFF);
}

struct ByteMap {
  std::array<std::string, 256> text;     // byte → UTF-8 of its code point
  std::array<int16_t, 0x144> byte_of{};  // code point (< U+0144) → byte, -1 if unmapped

  ByteMap() {
    byte_of.fill(-1);
    uint32_t next_extra = 0x100;
    for (uint32_t b = 0; b < 256; ++b) {
      const uint32_t cp = maps_to_itself(b) ? b : next_extra++;
      append_utf8(text[b], cp);
      byte_of[cp] = static_cast<int16_t>(b);
    }
  }
};

const ByteMap& byte_map() {
  static const ByteMap map;
  return map;
}

}  // namespace

std::string_view byte_to_mapped(uint8_t b) { return byte_map().text[b]; }

std::string byte_level_encode(std::string_view bytes) {
  const ByteMap& map = byte_map();
  std::string out;
  out.reserve(bytes.size() * 2);
  for (char c : bytes) out += map.text[static_cast<uint8_t>(c)];
  return out;
}

bool byte_level_decode(std::string_view mapped, std::string& out) {
  const ByteMap& map = byte_map();
  const size_t start = out.size();
  size_t pos = 0;
  while (pos < mapped.size()) {
    const uint32_t cp = next_code_point(mapped, pos);
    if (cp >= map.byte_of.size() || map.byte_of[cp] < 0) {
      out.resize(start);
      return false;
    }
    out.push_back(static_cast<char>(map.byte_of[cp]));
  }
  return true;
}

}  // namespace cai::tok
