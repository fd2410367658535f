// Scalars in and out of the AVX kernels (GEMM decoders and int8 dot products): an f16 field of a GGUF block as f32
// through F16C (core/block_bytes.h's load_f16 converts in software, which costs more than a block's products there),
// and the sum of 8 float lanes in one fixed tree. Include only from files compiled with -mavx2 -mf16c or above;
// internal linkage, so copies compiled with different ISA flags never meet in the link.
#pragma once

#include <immintrin.h>

#include <cstdint>

#include "core/block_bytes.h"

namespace cai::hal::cpu {
namespace {

inline float f16_at(const uint8_t* p) { return _cvtsh_ss(block_bytes::load_u16(p)); }

// Lanes (i, i+4), then (i, i+2), then (0, 1).
inline float hsum8(__m256 v) {
  const __m128 t4 = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
  const __m128 t2 = _mm_add_ps(t4, _mm_movehl_ps(t4, t4));
  return _mm_cvtss_f32(_mm_add_ss(t2, _mm_movehdup_ps(t2)));
}

}  // namespace
}  // namespace cai::hal::cpu
