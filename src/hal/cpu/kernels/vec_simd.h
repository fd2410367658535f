// F32 vector dot product and scaled accumulation on 256-bit AVX2 + FMA, for the attention loops over KV rows
// (kv_rows.cpp): four independent 8-lane chains over 32 elements at a time, reduced in one fixed tree, so a row's result
// depends only on its length. Included by gemm_avx2.cpp and gemm_avx512.cpp; internal linkage.
#pragma once

#include <immintrin.h>

#include <cstdint>

#include "hal/cpu/kernels/simd_scalars.h"

namespace cai::hal::cpu {
namespace {

inline float vec_dot_avx2(const float* x, const float* v, int64_t n) {
  __m256 a0 = _mm256_setzero_ps(), a1 = a0, a2 = a0, a3 = a0;
  int64_t d = 0;
  for (; d + 32 <= n; d += 32) {
    a0 = _mm256_fmadd_ps(_mm256_loadu_ps(x + d), _mm256_loadu_ps(v + d), a0);
    a1 = _mm256_fmadd_ps(_mm256_loadu_ps(x + d + 8), _mm256_loadu_ps(v + d + 8), a1);
    a2 = _mm256_fmadd_ps(_mm256_loadu_ps(x + d + 16), _mm256_loadu_ps(v + d + 16), a2);
    a3 = _mm256_fmadd_ps(_mm256_loadu_ps(x + d + 24), _mm256_loadu_ps(v + d + 24), a3);
  }
  for (; d + 8 <= n; d += 8) a0 = _mm256_fmadd_ps(_mm256_loadu_ps(x + d), _mm256_loadu_ps(v + d), a0);
  float dot = hsum8(_mm256_add_ps(_mm256_add_ps(a0, a1), _mm256_add_ps(a2, a3)));
  for (; d < n; ++d) dot += x[d] * v[d];
  return dot;
}

inline void vec_axpy_avx2(float a, const float* v, int64_t n, float* y) {
  const __m256 av = _mm256_set1_ps(a);
  int64_t d = 0;
  for (; d + 8 <= n; d += 8) _mm256_storeu_ps(y + d, _mm256_fmadd_ps(av, _mm256_loadu_ps(v + d), _mm256_loadu_ps(y + d)));
  for (; d < n; ++d) y[d] += a * v[d];
}

}  // namespace
}  // namespace cai::hal::cpu
