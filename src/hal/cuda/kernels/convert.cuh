// Raw-bit conversions for device and host code, bit-exact with src/core/dtype.cpp: f16 / bf16 / fp8 e4m3 → f32,
// f32 → f16 / bf16 (round to nearest even), and the element access of KV caches (F32, F16 or BF16).
#pragma once

#include <type_traits>

#include "cai/backend_abi.h"
#include "hal/cuda/dialect.h"

namespace cai::gpu {

// a·b rounded to float on its own: the affine decoders (d·q − m) must not let the compiler fuse the product into an
// FMA with the following add, or a card's result is 1 ulp off the format's (and the CPU's) value.
__device__ __forceinline__ float mul_rn(float a, float b) {
#if defined(CAI_GPU_SIMT)
  return a * b;  // host code without -mfma: never contracted
#else
  return __fmul_rn(a, b);
#endif
}

__device__ __host__ __forceinline__ float bits_to_f32(uint32_t u) {
  float f;
  __builtin_memcpy(&f, &u, 4);
  return f;
}

__device__ __host__ __forceinline__ uint32_t f32_to_bits(float f) {
  uint32_t u;
  __builtin_memcpy(&u, &f, 4);
  return u;
}

// IEEE binary16: inf / NaN keep their payload, subnormals are man · 2^-24 (exact in f32). Branch-free, so a decoder's
// next loads need not wait for this one's value: the exponent is rebiased by multiplying by 2^112, exact for normals
// and (read as an f32 subnormal) for subnormals alike.
__device__ __host__ __forceinline__ float f16_to_f32(uint16_t h) {
  const uint32_t sign = static_cast<uint32_t>(h & 0x8000u) << 16;
  const uint32_t body = static_cast<uint32_t>(h & 0x7FFFu) << 13;
  const uint32_t finite = f32_to_bits(bits_to_f32(body) * 0x1p112f);
  return bits_to_f32(sign | (body >= 0x0F800000u ? (body | 0x7F800000u) : finite));  // exponent 31: inf / NaN
}

__device__ __host__ __forceinline__ float bf16_to_f32(uint16_t b) {
  return bits_to_f32(static_cast<uint32_t>(b) << 16);
}

// Round to nearest even; NaN stays a (quiet) NaN, overflow becomes inf, tiny values f16 subnormals or zero.
__device__ __host__ __forceinline__ uint16_t f32_to_f16(float f) {
  const uint32_t u = f32_to_bits(f);
  const uint16_t sign = static_cast<uint16_t>((u >> 16) & 0x8000u);
  const uint32_t abs = u & 0x7FFFFFFFu;
  if (abs > 0x7F800000u) return static_cast<uint16_t>(sign | 0x7E00u | ((abs >> 13) & 0x3FFu));
  if (abs >= 0x477FF000u) return static_cast<uint16_t>(sign | 0x7C00u);
  if (abs < 0x38800000u) {
    // An f16 subnormal (or zero): the value in units of 2^-24, rounded to nearest even in integer arithmetic
    // (1024 becomes the smallest normal). f32 subnormals are far below half a unit.
    const uint32_t exp = abs >> 23;
    if (exp < 102) return sign;  // below 2^-25: rounds to zero
    const uint32_t man = (abs & 0x7FFFFFu) | 0x800000u, shift = 126u - exp;  // value = man · 2^(exp - 150)
    const uint32_t half = 1u << (shift - 1), rem = man & ((half << 1) - 1u);
    uint32_t r = man >> shift;
    if (rem > half || (rem == half && (r & 1u))) ++r;
    return static_cast<uint16_t>(sign | r);
  }
  // Normal: rebias the exponent, round the 13 dropped mantissa bits to nearest even (a carry may bump the exponent).
  uint32_t rebiased = abs - (112u << 23);
  rebiased += 0xFFFu + ((rebiased >> 13) & 1u);
  return static_cast<uint16_t>(sign | (rebiased >> 13));
}

__device__ __host__ __forceinline__ uint16_t f32_to_bf16(float f) {
  const uint32_t u = f32_to_bits(f);
  if ((u & 0x7FFFFFFFu) > 0x7F800000u) return static_cast<uint16_t>((u >> 16) | 0x0040u);  // quiet NaN
  return static_cast<uint16_t>((u + 0x7FFFu + ((u >> 16) & 1u)) >> 16);
}

__device__ __host__ __forceinline__ bool is_kv_cache_dtype(int32_t dtype) {
  return dtype == CAI_DTYPE_F32 || dtype == CAI_DTYPE_F16 || dtype == CAI_DTYPE_BF16;
}

// One element of a KV cache of dtype D (is_kv_cache_dtype) as stored, and its value as float.
template <int D>
using KvBits = std::conditional_t<D == CAI_DTYPE_F32, float, uint16_t>;
template <int D>
__device__ __forceinline__ float kv_bits_to_f32(KvBits<D> bits) {
  if constexpr (D == CAI_DTYPE_F32) return bits;
  else if constexpr (D == CAI_DTYPE_BF16) return bf16_to_f32(bits);
  else return f16_to_f32(bits);
}

// Element i of a KV cache of `dtype` (is_kv_cache_dtype) as float.
__device__ __forceinline__ float load_kv(const void* cache, int64_t i, int32_t dtype) {
  if (dtype == CAI_DTYPE_F32) return kv_bits_to_f32<CAI_DTYPE_F32>(static_cast<const float*>(cache)[i]);
  const uint16_t bits = static_cast<const uint16_t*>(cache)[i];
  return dtype == CAI_DTYPE_BF16 ? kv_bits_to_f32<CAI_DTYPE_BF16>(bits) : kv_bits_to_f32<CAI_DTYPE_F16>(bits);
}

// Stores v as element i of a KV cache of `dtype` (is_kv_cache_dtype).
__device__ __forceinline__ void store_kv(void* cache, int64_t i, int32_t dtype, float v) {
  if (dtype == CAI_DTYPE_F32) static_cast<float*>(cache)[i] = v;
  else static_cast<uint16_t*>(cache)[i] = dtype == CAI_DTYPE_BF16 ? f32_to_bf16(v) : f32_to_f16(v);
}

// e4m3fn: sign, 4-bit exponent (bias 7), 3-bit mantissa; no infinities; 0x7F / 0xFF are NaN.
__device__ __host__ __forceinline__ float fp8_e4m3_to_f32(uint8_t code) {
  const uint32_t sign = static_cast<uint32_t>(code & 0x80u) << 24;
  const uint32_t body = static_cast<uint32_t>(code & 0x7Fu) << 20;  // rebiased by 2^120 as f16_to_f32 does
  const uint32_t finite = f32_to_bits(bits_to_f32(body) * 0x1p120f);
  return bits_to_f32(sign | (body == 0x07F00000u ? 0x7FC00000u : finite));  // S.1111.111 is NaN
}

}  // namespace cai::gpu
