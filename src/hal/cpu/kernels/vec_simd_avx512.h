// The attention loops' block kernels (RowsDotFn, RowsAxpyFn) on 512-bit vectors, with the bits of vec_simd.h's 256-bit
// ones: a 512-bit lane does exactly what the 256-bit lane it stands for did, so widening changes how many products
// issue per instruction and how many loads feed them, never a result.
// - A dot's four 8-lane chains are two 16-lane registers, [chain 0 | chain 1] and [chain 2 | chain 3]; a tile of up to
//   4 queries × 3 rows keeps its 24 such registers live over the whole length, so each query and row vector is loaded
//   once per tile rather than once per product, and the chains end in vec_dot_finish_avx2.
// - An accumulation's columns take 16 per register, up to 4 outputs × 4 registers at a time, each column one fused
//   multiply-add per row in row order as before; columns past the last multiple of 16 go to rows_axpy_tail_avx2.
// Included by gemm_avx512.cpp only (compiled with -mavx512f); internal linkage.
#pragma once

#include <immintrin.h>

#include <cstdint>

#include "hal/cpu/kernels/vec_simd.h"

namespace cai::hal::cpu {
namespace {

// The QN × RN dots of queries q + i·ldq and rows r + t·ldr over n elements into out[i·ldo + t].
template <int QN, int RN>
void rows_dot_tile_avx512(const float* q, int64_t ldq, const float* r, int64_t ldr, int64_t n, float* out,
                          int64_t ldo) {
  __m512 lo[QN][RN], hi[QN][RN];  // [chain 0 | chain 1], [chain 2 | chain 3]
  for (int i = 0; i < QN; ++i)
    for (int t = 0; t < RN; ++t) lo[i][t] = hi[i][t] = _mm512_setzero_ps();
  int64_t d = 0;
  for (; d + 32 <= n; d += 32) {
    __m512 rl[RN], rh[RN];
#pragma GCC unroll 4
    for (int t = 0; t < RN; ++t) {
      rl[t] = _mm512_loadu_ps(r + t * ldr + d);
      rh[t] = _mm512_loadu_ps(r + t * ldr + d + 16);
    }
#pragma GCC unroll 4
    for (int i = 0; i < QN; ++i) {
      const __m512 ql = _mm512_loadu_ps(q + i * ldq + d), qh = _mm512_loadu_ps(q + i * ldq + d + 16);
#pragma GCC unroll 4
      for (int t = 0; t < RN; ++t) {
        lo[i][t] = _mm512_fmadd_ps(ql, rl[t], lo[i][t]);
        hi[i][t] = _mm512_fmadd_ps(qh, rh[t], hi[i][t]);
      }
    }
  }
  for (int i = 0; i < QN; ++i)
    for (int t = 0; t < RN; ++t)
      out[i * ldo + t] = vec_dot_finish_avx2(_mm512_castps512_ps256(lo[i][t]), _mm512_extractf32x8_ps(lo[i][t], 1),
                                             _mm512_castps512_ps256(hi[i][t]), _mm512_extractf32x8_ps(hi[i][t], 1),
                                             q + i * ldq, r + t * ldr, d, n);
}

template <int QN>
void rows_dot_queries_avx512(const float* q, int64_t ldq, const float* rows, int64_t ldr, int nt, int64_t n, float* out,
                             int64_t ldo) {
  int t = 0;
  for (; t + 3 <= nt; t += 3) rows_dot_tile_avx512<QN, 3>(q, ldq, rows + t * ldr, ldr, n, out + t, ldo);
  if (nt - t == 2) rows_dot_tile_avx512<QN, 2>(q, ldq, rows + t * ldr, ldr, n, out + t, ldo);
  if (nt - t == 1) rows_dot_tile_avx512<QN, 1>(q, ldq, rows + t * ldr, ldr, n, out + t, ldo);
}

// RowsDotFn: 4 queries at a time, each against 3 rows at a time.
inline void rows_dot_avx512(const float* q, int64_t ldq, int nq, const float* rows, int64_t ldr, int nt, int64_t n,
                            float* out, int64_t ldo) {
  in_runs_of_four(nq, [&](auto m, int i0) {
    rows_dot_queries_avx512<decltype(m)::value>(q + i0 * ldq, ldq, rows, ldr, nt, n, out + i0 * ldo, ldo);
  });
}

// M outputs' 16·C columns from d on, in registers over all nt rows.
template <int M, int C>
void rows_axpy_cols_avx512(const float* a, int64_t lda, const float* rows, int64_t ldr, int nt, int64_t d, float* y,
                           int64_t ldy) {
  __m512 acc[M][C];
  for (int i = 0; i < M; ++i)
    for (int c = 0; c < C; ++c) acc[i][c] = _mm512_loadu_ps(y + i * ldy + d + 16 * c);
  for (int t = 0; t < nt; ++t) {
    const float* row = rows + t * ldr + d;
    __m512 v[C];
    for (int c = 0; c < C; ++c) v[c] = _mm512_loadu_ps(row + 16 * c);
    for (int i = 0; i < M; ++i) {
      const __m512 w = _mm512_set1_ps(a[i * lda + t]);
      for (int c = 0; c < C; ++c) acc[i][c] = _mm512_fmadd_ps(w, v[c], acc[i][c]);
    }
  }
  for (int i = 0; i < M; ++i)
    for (int c = 0; c < C; ++c) _mm512_storeu_ps(y + i * ldy + d + 16 * c, acc[i][c]);
}

// The columns [0, n16) of M outputs: 128 / 64 at a time for 1-2 / 3-4 outputs, then 16.
template <int M>
void rows_axpy_group_avx512(const float* a, int64_t lda, const float* rows, int64_t ldr, int nt, int64_t n16, float* y,
                            int64_t ldy) {
  constexpr int C = M <= 2 ? 8 : 4;
  int64_t d = 0;
  for (; d + 16 * C <= n16; d += 16 * C) rows_axpy_cols_avx512<M, C>(a, lda, rows, ldr, nt, d, y, ldy);
  for (; d < n16; d += 16) rows_axpy_cols_avx512<M, 1>(a, lda, rows, ldr, nt, d, y, ldy);
}

// RowsAxpyFn: whole 16-column steps of up to 4 outputs at a time, then the rest as the 256-bit kernel does it.
inline void rows_axpy_avx512(const float* a, int64_t lda, int ny, const float* rows, int64_t ldr, int nt, int64_t n,
                             float* y, int64_t ldy) {
  const int64_t n16 = n / 16 * 16;
  in_runs_of_four(ny, [&](auto m, int i0) {
    rows_axpy_group_avx512<decltype(m)::value>(a + i0 * lda, lda, rows, ldr, nt, n16, y + i0 * ldy, ldy);
  });
  rows_axpy_tail_avx2(a, lda, ny, rows, ldr, nt, n16, n, y, ldy);
}

}  // namespace
}  // namespace cai::hal::cpu
