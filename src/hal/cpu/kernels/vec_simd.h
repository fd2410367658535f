// F32 dot products and scaled accumulation over blocks of KV rows on 256-bit AVX2 + FMA, for the attention loops
// (kv_rows.cpp). A dot runs four independent 8-lane chains over 32 elements at a time, reduced in one fixed tree; an
// accumulation adds the rows in order, one fused multiply-add per element and row. So every output depends only on its
// own inputs and length, never on how many queries or rows a call takes. Included by gemm_avx2.cpp and
// vec_simd_avx512.h (whose 512-bit kernels give the same bits); internal linkage.
#pragma once

#include <immintrin.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <type_traits>

#include "hal/cpu/kernels/simd_scalars.h"

namespace cai::hal::cpu {
namespace {

// The end of a dot whose four chains have run over [0, d), d the last multiple of 32: the 8-element steps left go on
// chain 0, then the chains reduce in one tree and the last elements add one by one. vec_simd_avx512.h's wider kernels
// end their dots here too, so they give these bits.
inline float vec_dot_finish_avx2(__m256 a0, __m256 a1, __m256 a2, __m256 a3, const float* x, const float* v, int64_t d,
                                 int64_t n) {
  for (; d + 8 <= n; d += 8) a0 = _mm256_fmadd_ps(_mm256_loadu_ps(x + d), _mm256_loadu_ps(v + d), a0);
  float dot = hsum8(_mm256_add_ps(_mm256_add_ps(a0, a1), _mm256_add_ps(a2, a3)));
  for (; d < n; ++d) dot = std::fma(x[d], v[d], dot);
  return dot;
}

inline float vec_dot_avx2(const float* x, const float* v, int64_t n) {
  __m256 a0 = _mm256_setzero_ps(), a1 = a0, a2 = a0, a3 = a0;
  int64_t d = 0;
  for (; d + 32 <= n; d += 32) {
    a0 = _mm256_fmadd_ps(_mm256_loadu_ps(x + d), _mm256_loadu_ps(v + d), a0);
    a1 = _mm256_fmadd_ps(_mm256_loadu_ps(x + d + 8), _mm256_loadu_ps(v + d + 8), a1);
    a2 = _mm256_fmadd_ps(_mm256_loadu_ps(x + d + 16), _mm256_loadu_ps(v + d + 16), a2);
    a3 = _mm256_fmadd_ps(_mm256_loadu_ps(x + d + 24), _mm256_loadu_ps(v + d + 24), a3);
  }
  return vec_dot_finish_avx2(a0, a1, a2, a3, x, v, d, n);
}

// The nq × nt dots of a block (RowsDotFn).
inline void rows_dot_avx2(const float* q, int64_t ldq, int nq, const float* rows, int64_t ldr, int nt, int64_t n,
                          float* out, int64_t ldo) {
  for (int t = 0; t < nt; ++t)
    for (int i = 0; i < nq; ++i) out[i * ldo + t] = vec_dot_avx2(q + i * ldq, rows + t * ldr, n);
}

// M outputs' 8·C columns from d on, kept in registers over all nt rows: one fused multiply-add chain per column
// vector, M·C of them independent (so a single output still fills the FMA pipes).
template <int M, int C>
void rows_axpy_cols(const float* a, int64_t lda, const float* rows, int64_t ldr, int nt, int64_t d, float* y,
                    int64_t ldy) {
  __m256 acc[M][C];
  for (int i = 0; i < M; ++i)
    for (int c = 0; c < C; ++c) acc[i][c] = _mm256_loadu_ps(y + i * ldy + d + 8 * c);
  for (int t = 0; t < nt; ++t) {
    const float* row = rows + t * ldr + d;
    for (int i = 0; i < M; ++i) {
      const __m256 w = _mm256_set1_ps(a[i * lda + t]);
      for (int c = 0; c < C; ++c) acc[i][c] = _mm256_fmadd_ps(w, _mm256_loadu_ps(row + 8 * c), acc[i][c]);
    }
  }
  for (int i = 0; i < M; ++i)
    for (int c = 0; c < C; ++c) _mm256_storeu_ps(y + i * ldy + d + 8 * c, acc[i][c]);
}

// The columns [0, n16) of M outputs: 64 / 32 / 16 at a time for 1 / 2 / 3-4 outputs (eight accumulators), then 16.
template <int M>
void rows_axpy_group(const float* a, int64_t lda, const float* rows, int64_t ldr, int nt, int64_t n16, float* y,
                     int64_t ldy) {
  constexpr int C = M == 1 ? 8 : M == 2 ? 4 : 2;
  int64_t d = 0;
  for (; d + 8 * C <= n16; d += 8 * C) rows_axpy_cols<M, C>(a, lda, rows, ldr, nt, d, y, ldy);
  for (; d < n16; d += 16) rows_axpy_cols<M, 2>(a, lda, rows, ldr, nt, d, y, ldy);
}

// Columns [n16, n) of the same sums, row by row: 8 at a time, then one by one (the part past the last multiple of 16
// columns, which every wider kernel leaves to this one).
inline void rows_axpy_tail_avx2(const float* a, int64_t lda, int ny, const float* rows, int64_t ldr, int nt,
                                int64_t n16, int64_t n, float* y, int64_t ldy) {
  for (int i = 0; i < ny; ++i)
    for (int t = 0; t < nt; ++t) {
      const float w = a[i * lda + t];
      const float* v = rows + t * ldr;
      float* yi = y + i * ldy;
      int64_t d = n16;
      for (; d + 8 <= n; d += 8)
        _mm256_storeu_ps(yi + d, _mm256_fmadd_ps(_mm256_set1_ps(w), _mm256_loadu_ps(v + d), _mm256_loadu_ps(yi + d)));
      for (; d < n; ++d) yi[d] = std::fma(w, v[d], yi[d]);
    }
}

// f(std::integral_constant<int, M>{}, i0) for i0 = 0, 4, 8, … < n, M = min(4, n − i0): the block kernels take
// queries or outputs four at a time, each run's size a compile-time constant.
template <class F>
void in_runs_of_four(int n, const F& f) {
  for (int i0 = 0; i0 < n; i0 += 4) {
    switch (std::min(4, n - i0)) {
      case 1: f(std::integral_constant<int, 1>{}, i0); break;
      case 2: f(std::integral_constant<int, 2>{}, i0); break;
      case 3: f(std::integral_constant<int, 3>{}, i0); break;
      default: f(std::integral_constant<int, 4>{}, i0); break;
    }
  }
}

// y_i += Σ_t a[i·lda + t] · row t, rows in order (RowsAxpyFn): whole 16-column steps of up to 4 outputs at a time,
// then the columns past the last multiple of 16 row by row.
inline void rows_axpy_avx2(const float* a, int64_t lda, int ny, const float* rows, int64_t ldr, int nt, int64_t n,
                           float* y, int64_t ldy) {
  const int64_t n16 = n / 16 * 16;
  in_runs_of_four(ny, [&](auto m, int i0) {
    rows_axpy_group<decltype(m)::value>(a + i0 * lda, lda, rows, ldr, nt, n16, y + i0 * ldy, ldy);
  });
  rows_axpy_tail_avx2(a, lda, ny, rows, ldr, nt, n16, n, y, ldy);
}

}  // namespace
}  // namespace cai::hal::cpu
