// Per-ISA GEMM kernel tables used by gemm.cpp (scalar / AVX2 / AVX-512 / NEON implementations in gemm_*.cpp).
#pragma once

#include <cstdint>
#include <type_traits>

#include "core/dtype.h"

namespace cai::hal::cpu {

// Most activation rows one fused dot call handles.
inline constexpr int kMaxDotRows = 8;

// Fused dequant·dot of one weight row (`in` elements, whole blocks) with nx (1..kMaxDotRows) activation rows
// x + j·ldx: out[j] = Σ_k w[k]·x[j·ldx + k].
using RowDotFn = void (*)(const uint8_t* w, const float* x, int64_t ldx, int nx, int64_t in, float* out);
// Decodes `in` elements (whole blocks) of one weight row to F32.
using DequantFn = void (*)(const uint8_t* w, float* dst, int64_t in);
// c[i·ldc + j] += Σ_k a[i·lda + k] · p[k·nr + j] for i < m (1..mr), j < n_valid (<= nr). p is a packed panel.
using MicroFn = void (*)(const float* a, int64_t lda, int m, const float* p, int64_t kc, float* c, int64_t ldc,
                         int n_valid);

// Batch-invariant tile: the same per-output chains as RowDotFn, over weights already decoded to F32. For the
// tile_rows weight rows w + r·ldw and nx (1..tile_cols) activation rows x + j·ldx, continues each output's unreduced
// chains acc + (r·ld_acc + j)·acc_floats over kc more columns (a multiple of 32) and stores them back; `first`
// starts the chains at zero instead of reading acc.
using TileFn = void (*)(const float* w, int64_t ldw, const float* x, int64_t ldx, int nx, int64_t kc, float* acc,
                        int64_t ld_acc, bool first);
// Reduces the chains of n outputs (acc + j·acc_floats) into out[j], exactly as RowDotFn does at the end of a row.
using FinishFn = void (*)(const float* acc, int64_t n, float* out);
// The attention loops over a block of F32 (or decoded F16 / BF16) KV rows, row t at rows + t·ldr:
// out[i·ldo + t] = Σ_k q[i·ldq + k] · row_t[k] for nq query vectors, and y[i·ldy + k] += Σ_t a[i·lda + t] · row_t[k]
// (rows in order) for ny outputs. Each output gets the same bits whatever nq, nt or ny are.
using RowsDotFn = void (*)(const float* q, int64_t ldq, int nq, const float* rows, int64_t ldr, int nt, int64_t n,
                           float* out, int64_t ldo);
using RowsAxpyFn = void (*)(const float* a, int64_t lda, int ny, const float* rows, int64_t ldr, int nt, int64_t n,
                            float* y, int64_t ldy);
// The elementwise loops of elementwise_loops.h at the table's vector width: out[i] = silu(gate[i]) · up[i] for i < n,
// and x = softmax(x) over n values.
using SiluMulFn = void (*)(const float* gate, const float* up, float* out, int64_t n);
using SoftmaxRowFn = void (*)(float* x, int64_t n);

// f(std::integral_constant<int, M>{}) for M = m, 1 ≤ m ≤ 6 (larger m take 6): how a table's MicroFn picks its
// micro-kernel instance for the call's activation rows.
template <class F>
void with_micro_rows(int m, const F& f) {
  switch (m) {
    case 1: return f(std::integral_constant<int, 1>{});
    case 2: return f(std::integral_constant<int, 2>{});
    case 3: return f(std::integral_constant<int, 3>{});
    case 4: return f(std::integral_constant<int, 4>{});
    case 5: return f(std::integral_constant<int, 5>{});
    default: return f(std::integral_constant<int, 6>{});
  }
}

struct GemmKernels {
  RowDotFn row_dot[static_cast<int>(DType::kCount)];  // null: no kernel for that weight dtype
  DequantFn dequant[static_cast<int>(DType::kCount)];
  MicroFn micro;
  int nr;       // panel width (weight rows per packed panel)
  int mr;       // most activation rows per micro call
  TileFn tile;  // null: this ISA has no batch-invariant tile, the fused path serves every batch
  FinishFn finish;
  int tile_rows, tile_cols, acc_floats;
  RowsDotFn rows_dot;
  RowsAxpyFn rows_axpy;
  SiluMulFn silu_mul;  // the loops around exp_poly, which the compiler vectorises only as wide as the file's ISA
  SoftmaxRowFn softmax_row;
};

const GemmKernels& gemm_kernels_scalar();
// The table of active_cpu_isa(): what dense_gemm dispatches through (also the KV cache's fast F16/BF16 decode).
const GemmKernels& active_gemm_kernels();
#if defined(__x86_64__)
const GemmKernels& gemm_kernels_avx2();
const GemmKernels& gemm_kernels_avx512();
// elementwise_loops.h built for AVX2 and for AVX-512 (elementwise_avx2.cpp, elementwise_avx512.cpp).
void silu_mul_avx2(const float* gate, const float* up, float* out, int64_t n);
void softmax_row_avx2(float* x, int64_t n);
void silu_mul_avx512(const float* gate, const float* up, float* out, int64_t n);
void softmax_row_avx512(float* x, int64_t n);
#endif
#if defined(__aarch64__)
// The scalar table with the exact path's fused dequant·dot and the attention loops on NEON (gemm_neon.cpp), for the
// neon, dotprod, i8mm and sve families.
const GemmKernels& gemm_kernels_neon();
#endif

}  // namespace cai::hal::cpu
