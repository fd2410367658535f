// Little-endian fields of GGUF quant blocks at any alignment (blocks of 18, 22, 50, 66, ... bytes leave most fields
// unaligned), for the scalar codecs in core/quant*.cpp.
#pragma once

#include <cstdint>
#include <cstring>

#include "core/dtype.h"

namespace cai::block_bytes {

inline uint16_t load_u16(const uint8_t* p) {
  uint16_t v;
  std::memcpy(&v, p, 2);
  return v;
}

inline uint32_t load_u32(const uint8_t* p) {
  uint32_t v;
  std::memcpy(&v, p, 4);
  return v;
}

// Four bytes of int8 codes as one word (the quad a SIMD kernel broadcasts to every lane).
inline int32_t load_i32(const void* p) {
  int32_t v;
  std::memcpy(&v, p, 4);
  return v;
}

inline float load_f16(const uint8_t* p) { return f16_to_f32(load_u16(p)); }

inline void store_u16(uint8_t* p, uint16_t v) { std::memcpy(p, &v, 2); }

}  // namespace cai::block_bytes
