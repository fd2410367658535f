// Portable GEMM kernels (any architecture): dequantize through core/quant, plain-loop dot and 4×16 micro-kernel.
#include <algorithm>

#include "core/quant.h"
#include "hal/cpu/kernels/elementwise_loops.h"
#include "hal/cpu/kernels/gemm_kernels.h"

namespace cai::hal::cpu {

namespace {

constexpr int kNr = 16;
constexpr int kMr = 4;
constexpr int64_t kChunk = 256;  // elements decoded at a time (a multiple of every block size)

template <DType T>
void dequant(const uint8_t* w, float* dst, int64_t in) {
  dequantize_row(T, w, dst, in);
}

template <DType T>
void row_dot(const uint8_t* w, const float* x, int64_t ldx, int nx, int64_t in, float* out) {
  const DTypeInfo& info = dtype_info(T);
  float buf[kChunk];
  float acc[kMaxDotRows] = {};
  for (int64_t k0 = 0; k0 < in; k0 += kChunk) {
    int64_t len = std::min(kChunk, in - k0);
    dequantize_row(T, w + k0 / info.block_elems * info.block_bytes, buf, len);
    for (int j = 0; j < nx; ++j) {
      const float* xj = x + j * ldx + k0;
      float s = 0.0f;
      for (int64_t k = 0; k < len; ++k) s += buf[k] * xj[k];
      acc[j] += s;
    }
  }
  for (int j = 0; j < nx; ++j) out[j] = acc[j];
}

void micro(const float* a, int64_t lda, int m, const float* p, int64_t kc, float* c, int64_t ldc, int n_valid) {
  float acc[kMr][kNr] = {};
  for (int64_t k = 0; k < kc; ++k) {
    const float* pk = p + k * kNr;
    for (int i = 0; i < m; ++i) {
      float av = a[i * lda + k];
      for (int j = 0; j < kNr; ++j) acc[i][j] += av * pk[j];
    }
  }
  for (int i = 0; i < m; ++i)
    for (int j = 0; j < n_valid; ++j) c[i * ldc + j] += acc[i][j];
}

void rows_dot(const float* q, int64_t ldq, int nq, const float* rows, int64_t ldr, int nt, int64_t n, float* out,
              int64_t ldo) {
  for (int t = 0; t < nt; ++t)
    for (int i = 0; i < nq; ++i) {
      float dot = 0;
      for (int64_t d = 0; d < n; ++d) dot += q[i * ldq + d] * rows[t * ldr + d];
      out[i * ldo + t] = dot;
    }
}

void rows_axpy(const float* a, int64_t lda, int ny, const float* rows, int64_t ldr, int nt, int64_t n, float* y,
               int64_t ldy) {
  for (int i = 0; i < ny; ++i)
    for (int t = 0; t < nt; ++t)
      for (int64_t d = 0; d < n; ++d) y[i * ldy + d] += a[i * lda + t] * rows[t * ldr + d];
}

template <DType... Ts>
GemmKernels make_table() {
  GemmKernels k{};
  ((k.row_dot[static_cast<int>(Ts)] = &row_dot<Ts>), ...);
  ((k.dequant[static_cast<int>(Ts)] = &dequant<Ts>), ...);
  k.micro = &micro;
  k.nr = kNr;
  k.mr = kMr;
  k.rows_dot = &rows_dot;
  k.rows_axpy = &rows_axpy;
  k.silu_mul = &silu_mul_loop;
  k.softmax_row = &softmax_row_loop;
  return k;
}

}  // namespace

const GemmKernels& gemm_kernels_scalar() {
  static const GemmKernels k =
      make_table<DType::kF32, DType::kF16, DType::kBF16, DType::kQ8_0, DType::kQ4_0, DType::kQ4_K, DType::kQ5_K,
                 DType::kQ6_K, DType::kF8_E4M3, DType::kQ4_1, DType::kQ5_0, DType::kQ5_1, DType::kQ2_K, DType::kQ3_K,
                 DType::kIQ4_NL, DType::kIQ4_XS, DType::kIQ3_XXS, DType::kIQ3_S, DType::kIQ2_XXS, DType::kIQ2_XS,
                 DType::kIQ2_S, DType::kIQ1_S, DType::kIQ1_M>();
  return k;
}

}  // namespace cai::hal::cpu
