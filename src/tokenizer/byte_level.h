// GPT-2 byte-level mapping: every byte ↔ one printable code point (bytes_to_unicode), used by byte-level BPE.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace cai::tok {

// The UTF-8 text of the code point that byte `b` maps to (0x20 → "Ġ", 0x0A → "Ċ", 'a' → "a").
std::string_view byte_to_mapped(uint8_t b);

// Maps every byte of `bytes` to its code point, giving the form byte-level vocabularies store.
std::string byte_level_encode(std::string_view bytes);

// Inverse of byte_level_encode: appends the original bytes to `out`. Returns false (and appends nothing)
// when `mapped` holds a code point outside the map, i.e. it is not byte-level text.
bool byte_level_decode(std::string_view mapped, std::string& out);

}  // namespace cai::tok
