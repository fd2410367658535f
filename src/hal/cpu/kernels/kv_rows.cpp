// Reading paged KV cache rows (F32, F16, BF16, Q8_0) inside the attention loops: dot products and scaled
// accumulation, decoding only the elements read (Q8_0 block by block, never a whole-cache conversion).
#include <cstring>

#include "core/dtype.h"
#include "hal/cpu/kernels/gemm_kernels.h"
#include "hal/cpu/kernels/kernels.h"

namespace cai::hal::cpu {

namespace {

constexpr int kQ8Block = 32;     // elements of a Q8_0 block
constexpr size_t kQ8Bytes = 34;  // f16 d, int8 qs[32]

const uint8_t* elem_ptr(const TensorView& cache, int64_t elem0) {
  return static_cast<const uint8_t*>(cache.data) + row_bytes(cache.dtype, elem0);
}

float q8_scale(const uint8_t* block) {
  uint16_t d;
  std::memcpy(&d, block, 2);
  return f16_to_f32(d);
}

// Σ x[k]·qs[k] over one Q8_0 block, in 8 independent lanes so the compiler can vectorise it (fixed order).
float block_dot_q8(const float* x, const int8_t* qs) {
  float lane[8] = {};
  for (int k = 0; k < kQ8Block; k += 8)
    for (int l = 0; l < 8; ++l) lane[l] += x[k + l] * static_cast<float>(qs[k + l]);
  return ((lane[0] + lane[4]) + (lane[1] + lane[5])) + ((lane[2] + lane[6]) + (lane[3] + lane[7]));
}

}  // namespace

const float* kv_f32_rows(const KvRows& r, int64_t n, float* buf, int64_t* ld) {
  if (r.cache->dtype == DType::kF32) {
    *ld = r.stride;
    return reinterpret_cast<const float*>(elem_ptr(*r.cache, r.elem0));
  }
  kv_read_rows(r, n, buf, n);
  *ld = n;
  return buf;
}

Status check_kv_parts(const char* op, DType t, std::initializer_list<int> widths) {
  CAI_TRY(check_kv_cache_dtype(op, t));
  const int block = dtype_info(t).block_elems;
  for (int w : widths)
    if (w % block != 0)
      return invalid_argument("{}: a {} cache needs widths in whole blocks of {}, not {}", op, dtype_name(t), block, w);
  return {};
}

void kv_read_rows(const KvRows& r, int64_t n, float* dst, int64_t ld) {
  if (r.cache->dtype == DType::kF32) {
    for (int t = 0; t < r.nt; ++t)
      std::memcpy(dst + t * ld, elem_ptr(*r.cache, r.elem0 + t * r.stride), n * sizeof(float));
    return;
  }
  const DequantFn decode = active_gemm_kernels().dequant[static_cast<int>(r.cache->dtype)];  // F16C / AVX
  for (int t = 0; t < r.nt; ++t) decode(elem_ptr(*r.cache, r.elem0 + t * r.stride), dst + t * ld, n);
}

void kv_dot_block(const KvRows& r, int64_t n, const float* x, int64_t ldx, int nx, float* out, int64_t ldo,
                  float* buf) {
  if (r.cache->dtype == DType::kQ8_0) {  // decoded block by block, in each product
    for (int t = 0; t < r.nt; ++t)
      for (int j = 0; j < nx; ++j) {
        const uint8_t* blk = elem_ptr(*r.cache, r.elem0 + t * r.stride);
        float dot = 0;
        for (int64_t b = 0; b < n; b += kQ8Block, blk += kQ8Bytes)
          dot += q8_scale(blk) * block_dot_q8(x + j * ldx + b, reinterpret_cast<const int8_t*>(blk + 2));
        out[j * ldo + t] = dot;
      }
    return;
  }
  int64_t ld;
  const float* rows = kv_f32_rows(r, n, buf, &ld);  // decoded once for all nx
  active_gemm_kernels().rows_dot(x, ldx, nx, rows, ld, r.nt, n, out, ldo);
}

void kv_axpy_block(const KvRows& r, int64_t n, const float* a, int64_t lda, int ny, float* y, int64_t ldy, float* buf) {
  if (r.cache->dtype == DType::kQ8_0) {
    for (int j = 0; j < ny; ++j)
      for (int t = 0; t < r.nt; ++t) {
        const uint8_t* blk = elem_ptr(*r.cache, r.elem0 + t * r.stride);
        for (int64_t b = 0; b < n; b += kQ8Block, blk += kQ8Bytes) {
          const int8_t* qs = reinterpret_cast<const int8_t*>(blk + 2);
          const float ad = a[j * lda + t] * q8_scale(blk);
          for (int k = 0; k < kQ8Block; ++k) y[j * ldy + b + k] += ad * static_cast<float>(qs[k]);
        }
      }
    return;
  }
  int64_t ld;
  const float* rows = kv_f32_rows(r, n, buf, &ld);
  active_gemm_kernels().rows_axpy(a, lda, ny, rows, ld, r.nt, n, y, ldy);
}

}  // namespace cai::hal::cpu
