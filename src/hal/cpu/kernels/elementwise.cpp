// CPU kernels for the row-wise and elementwise ops: embed, rms_norm, add, swiglu, softmax, kv_write.
#include <algorithm>
#include <cmath>
#include <cstring>

#include "core/quant.h"
#include "core/thread_pool.h"
#include "hal/cpu/kernels/gemm_kernels.h"
#include "hal/cpu/kernels/kernels.h"
#include "hal/cpu/kernels/qdot_groups.h"

namespace cai::hal::cpu {

void parallel_rows(const OpContext& ctx, int64_t n, int64_t grain, const std::function<void(int64_t, int64_t)>& fn) {
  if (ctx.pool)
    ctx.pool->parallel_for(n, grain, fn);
  else
    fn(0, n);
}

Status embed(const OpContext& ctx, const TensorView& table, const TensorView& id_view, const TensorView& out) {
  const int32_t* ids = id_view.as<const int32_t>();
  const int64_t n = id_view.n_elements(), n_vocab = table.rows(), dim = table.cols();
  if (out.dtype != DType::kF32 || out.rows() != n || out.cols() != dim)
    return invalid_argument("embed: out must be F32 [{}, {}], got {}", n, dim, out.shape_string());
  for (int64_t i = 0; i < n; ++i)
    if (ids[i] < 0 || ids[i] >= n_vocab)
      return invalid_argument("embed: token id {} outside vocab of {}", ids[i], n_vocab);
  if (group_rows(table.dtype) > 1) {  // a tied embedding packed for the head's dense_gemm (qdot_groups.h)
    parallel_rows(ctx, n, 1, [&](int64_t b, int64_t e) {
      for (int64_t i = b; i < e; ++i)
        dequantize_packed_row(table.dtype, table.as<const uint8_t>(), ids[i], dim, out.row<float>(i));
    });
    return {};
  }
  parallel_rows(ctx, n, 1, [&](int64_t b, int64_t e) {
    for (int64_t i = b; i < e; ++i) dequantize_row(table.dtype, table.row(ids[i]), out.row<float>(i), dim);
  });
  return {};
}

Status rms_norm(const OpContext& ctx, const TensorView& x, const TensorView& w, float eps, const TensorView& out) {
  const int64_t dim = x.cols();
  if (w.n_elements() != dim || out.n_elements() != x.n_elements())
    return invalid_argument("rms_norm: x {} w {} out {}", x.shape_string(), w.shape_string(), out.shape_string());
  parallel_rows(ctx, x.rows(), 4, [&](int64_t b, int64_t e) {
    const float* wp = w.as<const float>();
    for (int64_t r = b; r < e; ++r) {
      const float* xr = x.row<const float>(r);
      float* o = out.row<float>(r);
      double ss = 0;
      for (int64_t i = 0; i < dim; ++i) ss += static_cast<double>(xr[i]) * xr[i];
      const float inv = 1.0f / std::sqrt(static_cast<float>(ss / static_cast<double>(dim)) + eps);
      for (int64_t i = 0; i < dim; ++i) o[i] = xr[i] * inv * wp[i];
    }
  });
  return {};
}

Status add(const OpContext& ctx, const TensorView& a, const TensorView& b, const TensorView& out) {
  const int64_t n = a.n_elements();
  if (b.n_elements() != n || out.n_elements() != n) return invalid_argument("add: size mismatch");
  parallel_rows(ctx, n, 1 << 14, [&](int64_t s, int64_t e) {
    const float* ap = a.as<const float>();
    const float* bp = b.as<const float>();
    float* o = out.as<float>();
    for (int64_t i = s; i < e; ++i) o[i] = ap[i] + bp[i];
  });
  return {};
}

Status swiglu(const OpContext& ctx, const TensorView& gate, const TensorView& up, const TensorView& out) {
  const int64_t n = gate.n_elements();
  if (up.n_elements() != n || out.n_elements() != n) return invalid_argument("swiglu: size mismatch");
  const SiluMulFn silu_mul = active_gemm_kernels().silu_mul;
  parallel_rows(ctx, n, 1 << 13, [&](int64_t s, int64_t e) {
    silu_mul(gate.as<const float>() + s, up.as<const float>() + s, out.as<float>() + s, e - s);
  });
  return {};
}

void softmax_row(float* x, int64_t n) { active_gemm_kernels().softmax_row(x, n); }

Status softmax(const OpContext& ctx, const TensorView& x) {
  parallel_rows(ctx, x.rows(), 4, [&](int64_t b, int64_t e) {
    for (int64_t r = b; r < e; ++r) softmax_row(x.row<float>(r), x.cols());
  });
  return {};
}

Status copy_cols(const OpContext& ctx, const TensorView& src, int64_t src_col, const TensorView& dst, int64_t dst_col,
                 int64_t n_cols) {
  if (src.rows() != dst.rows() || src_col < 0 || dst_col < 0 || n_cols < 0 || src_col + n_cols > src.cols() ||
      dst_col + n_cols > dst.cols() || src.dtype != DType::kF32 || dst.dtype != DType::kF32)
    return invalid_argument("copy_cols: {} cols from {}@{} to {}@{}", n_cols, src.shape_string(), src_col,
                            dst.shape_string(), dst_col);
  parallel_rows(ctx, src.rows(), 64, [&](int64_t b, int64_t e) {
    for (int64_t r = b; r < e; ++r)
      std::memmove(dst.row<float>(r) + dst_col, src.row<const float>(r) + src_col,
                   static_cast<size_t>(n_cols) * sizeof(float));
  });
  return {};
}

Status kv_write(const OpContext& ctx, const TensorView& src, const TensorView& slot_view, const TensorView& cache) {
  CAI_TRY(check_kv_cache_dtype("kv_write", cache.dtype));
  const int32_t* slots = slot_view.as<const int32_t>();
  const int64_t width = src.cols();
  if (cache.n_elements() / cache.dim(0) != width || src.dtype != DType::kF32)
    return invalid_argument("kv_write: src {} does not fit cache {}", src.shape_string(), cache.shape_string());
  const int64_t n_slots = cache.dim(0);
  const size_t slot_bytes = row_bytes(cache.dtype, width);
  for (int64_t i = 0; i < src.rows(); ++i) {
    if (slots[i] < 0 || slots[i] >= n_slots) return invalid_argument("kv_write: slot {} outside {}", slots[i], n_slots);
    uint8_t* dst = static_cast<uint8_t*>(cache.data) + static_cast<size_t>(slots[i]) * slot_bytes;
    CAI_TRY(quantize_row(cache.dtype, src.row<const float>(i), dst, width));
  }
  return {};
}

}  // namespace cai::hal::cpu
