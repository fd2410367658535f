// Little-endian field loads of quantized weight blocks. Block rows are only 2-byte aligned for most block types (their
// byte sizes are even but not multiples of 4), so wider fields are assembled from 2-byte words unless a decoder knows
// better (weight_alignment in dequant.cuh).
#pragma once

#include "hal/cuda/kernels/convert.cuh"

namespace cai::gpu {

inline constexpr int kChunk = 8;  // the fast decoders produce 8 consecutive elements of a row

__device__ __forceinline__ uint16_t load_u16(const uint8_t* p) { return *reinterpret_cast<const uint16_t*>(p); }
// Only where the address is 4-byte aligned (Q4_K/Q5_K rows).
__device__ __forceinline__ uint32_t load_u32(const uint8_t* p) { return *reinterpret_cast<const uint32_t*>(p); }
// A u32 field at a 2-byte-aligned address.
__device__ __forceinline__ uint32_t load_u32_a2(const uint8_t* p) {
  return static_cast<uint32_t>(load_u16(p)) | (static_cast<uint32_t>(load_u16(p + 2)) << 16);
}
__device__ __forceinline__ float load_f16(const uint8_t* p) { return f16_to_f32(load_u16(p)); }

// Bytes p[0..8) of a 2-byte-aligned address, as two little-endian words.
__device__ __forceinline__ void load8_u16(const uint8_t* p, uint32_t* lo, uint32_t* hi) {
  *lo = load_u32_a2(p);
  *hi = load_u32_a2(p + 4);
}

__device__ __forceinline__ int byte_of(uint32_t lo, uint32_t hi, int i) {
  return static_cast<int>(((i < 4 ? lo : hi) >> (8 * (i & 3))) & 0xFFu);
}

}  // namespace cai::gpu
