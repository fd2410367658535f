// Raw-bit decoders of f16, bf16 and fp8 e4m3 for device and host code, bit-exact with src/core/dtype.cpp.
#pragma once

#include "hal/cuda/dialect.h"

namespace cai::gpu {

__device__ __host__ __forceinline__ float bits_to_f32(uint32_t u) {
  float f;
  __builtin_memcpy(&f, &u, 4);
  return f;
}

// IEEE binary16: inf / NaN keep their payload, subnormals are man · 2^-24 (exact in f32).
__device__ __host__ __forceinline__ float f16_to_f32(uint16_t h) {
  const uint32_t sign = static_cast<uint32_t>(h & 0x8000u) << 16;
  const uint32_t exp = (h >> 10) & 31u;
  const uint32_t man = h & 0x3FFu;
  if (exp == 31) return bits_to_f32(sign | 0x7F800000u | (man << 13));
  if (exp == 0) {
    const float mag = static_cast<float>(man) * 0x1p-24f;
    return sign ? -mag : mag;
  }
  return bits_to_f32(sign | ((exp + 112u) << 23) | (man << 13));
}

__device__ __host__ __forceinline__ float bf16_to_f32(uint16_t b) {
  return bits_to_f32(static_cast<uint32_t>(b) << 16);
}

// e4m3fn: sign, 4-bit exponent (bias 7), 3-bit mantissa; no infinities; 0x7F / 0xFF are NaN.
__device__ __host__ __forceinline__ float fp8_e4m3_to_f32(uint8_t code) {
  const uint32_t sign = static_cast<uint32_t>(code & 0x80u) << 24;
  const uint32_t exp = (code >> 3) & 15u;
  const uint32_t man = code & 7u;
  if (exp == 15 && man == 7) return bits_to_f32(sign | 0x7FC00000u);
  if (exp == 0) {
    const float mag = static_cast<float>(man) * 0x1p-9f;
    return sign ? -mag : mag;
  }
  return bits_to_f32(sign | ((exp + 120u) << 23) | (man << 20));
}

}  // namespace cai::gpu
