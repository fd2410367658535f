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

// float(u) − bias for 0 ≤ u < 2^23 and a small integer bias, exactly, from the bits of 2^23 + u: integer and FP32
// adds, where an int → float conversion issues at a quarter of the FP32 rate on NVIDIA parts.
__device__ __forceinline__ float small_int_to_f32(uint32_t u, float bias) {
  return bits_to_f32(0x4B000000u | u) - (8388608.0f + bias);
}

// v[0..8) = p[0..8) of a 16-byte-aligned address, in two 16-byte loads.
__device__ __forceinline__ void load_f32x8(const float* p, float* v) {
#if defined(CAI_GPU_SIMT)
  for (int k = 0; k < kChunk; ++k) v[k] = p[k];
#else
  const float4 a = reinterpret_cast<const float4*>(p)[0], b = reinterpret_cast<const float4*>(p)[1];
  v[0] = a.x, v[1] = a.y, v[2] = a.z, v[3] = a.w, v[4] = b.x, v[5] = b.y, v[6] = b.z, v[7] = b.w;
#endif
}

}  // namespace cai::gpu
