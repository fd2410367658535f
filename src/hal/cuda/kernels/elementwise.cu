// CUDA-dialect row-wise and elementwise ops: rms_norm, add, swiglu, softmax, copy_cols, kv_write.
#include "hal/cuda/kernels/convert.cuh"
#include "hal/cuda/kernels/launchers.h"
#include "hal/cuda/kernels/reduce.cuh"
#include "hal/cuda/kernels/tensor_shape.cuh"

namespace cai::gpu {

namespace {

constexpr int kElementwiseThreads = 256;

// Blocks for a grid-stride loop over n values.
int grid_stride_blocks(const Context& ctx, int64_t n) {
  const int64_t wanted = (n + kElementwiseThreads - 1) / kElementwiseThreads;
  const int64_t cap = static_cast<int64_t>(ctx.n_sms) * 32;
  return static_cast<int>(wanted < 1 ? 1 : (wanted > cap ? cap : wanted));
}

__global__ void rms_norm_kernel(const float* __restrict__ x, const float* __restrict__ w, float eps, int64_t dim,
                                float* __restrict__ out) {
  __shared__ float partials[GPU_MAX_WARPS];
  const float* xr = x + static_cast<int64_t>(blockIdx.x) * dim;
  float* o = out + static_cast<int64_t>(blockIdx.x) * dim;
  float ss = 0.0f;
  for (int64_t i = threadIdx.x; i < dim; i += blockDim.x) ss += xr[i] * xr[i];
  ss = block_sum(ss, partials);
  const float inv = 1.0f / sqrtf(ss / static_cast<float>(dim) + eps);
  for (int64_t i = threadIdx.x; i < dim; i += blockDim.x) o[i] = xr[i] * inv * w[i];
}

__global__ void add_kernel(const float* __restrict__ a, const float* __restrict__ b, float* __restrict__ out,
                           int64_t n) {
  const int64_t stride = static_cast<int64_t>(gridDim.x) * blockDim.x;
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += stride)
    out[i] = a[i] + b[i];
}

__global__ void swiglu_kernel(const float* __restrict__ gate, const float* __restrict__ up, float* __restrict__ out,
                              int64_t n) {
  const int64_t stride = static_cast<int64_t>(gridDim.x) * blockDim.x;
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += stride) {
    const float g = gate[i];
    out[i] = g / (1.0f + expf(-g)) * up[i];
  }
}

__global__ void softmax_kernel(float* x, int64_t n) {
  __shared__ float partials[GPU_MAX_WARPS];
  float* row = x + static_cast<int64_t>(blockIdx.x) * n;
  float mx = -INFINITY;
  for (int64_t i = threadIdx.x; i < n; i += blockDim.x) mx = fmaxf(mx, row[i]);
  mx = block_max(mx, partials);
  float sum = 0.0f;
  for (int64_t i = threadIdx.x; i < n; i += blockDim.x) {
    const float e = expf(row[i] - mx);
    row[i] = e;
    sum += e;
  }
  const float inv = 1.0f / block_sum(sum, partials);
  for (int64_t i = threadIdx.x; i < n; i += blockDim.x) row[i] *= inv;
}

// One block per row; a row's own columns never overlap between src and dst (checked by the launcher).
__global__ void copy_cols_kernel(const float* src, int64_t src_stride, float* dst, int64_t dst_stride, int64_t n_cols) {
  const float* s = src + static_cast<int64_t>(blockIdx.x) * src_stride;
  float* d = dst + static_cast<int64_t>(blockIdx.x) * dst_stride;
  for (int64_t j = threadIdx.x; j < n_cols; j += blockDim.x) d[j] = s[j];
}

// One block per source row, stored in the cache's dtype; rows whose slot lies outside the cache are skipped (the
// host cannot read slots).
__global__ void kv_write_kernel(const float* __restrict__ src, const int32_t* __restrict__ slots, int64_t width,
                                int64_t n_slots, void* __restrict__ cache, int32_t dtype) {
  const int32_t slot = slots[blockIdx.x];
  if (slot < 0 || slot >= n_slots) return;
  const float* s = src + static_cast<int64_t>(blockIdx.x) * width;
  const int64_t d0 = static_cast<int64_t>(slot) * width;
  for (int64_t j = threadIdx.x; j < width; j += blockDim.x) store_kv(cache, d0 + j, dtype, s[j]);
}

bool is_f32(const CaiTensor& t) { return t.dtype == CAI_DTYPE_F32; }

}  // namespace

int rms_norm(const Context& ctx, const CaiTensor& x, const CaiTensor& w, float eps, const CaiTensor& out,
             CaiError* err) {
  const int64_t dim = cols(x);
  if (!is_f32(x) || !is_f32(w) || !is_f32(out) || n_elements(w) != dim || n_elements(out) != n_elements(x))
    return fail(err, CAI_ERR_INVALID_ARGUMENT, "rms_norm: x %s w %s out %s", shape_string(x).c_str(),
                shape_string(w).c_str(), shape_string(out).c_str());
  if (rows(x) == 0) return CAI_OK;
  // Up to 1,024 threads, so each thread's loads are one or two and not a chain of round trips.
  const int threads = row_block_threads(dim, ctx.warp_size, 1024);
  GPU_LAUNCH(static_cast<unsigned>(rows(x)), threads, 0, ctx.stream, rms_norm_kernel)
  (static_cast<const float*>(x.data), static_cast<const float*>(w.data), eps, dim, static_cast<float*>(out.data));
  return check_launch(err, "rms_norm");
}

int add(const Context& ctx, const CaiTensor& a, const CaiTensor& b, const CaiTensor& out, CaiError* err) {
  const int64_t n = n_elements(a);
  if (!is_f32(a) || !is_f32(b) || !is_f32(out) || n_elements(b) != n || n_elements(out) != n)
    return fail(err, CAI_ERR_INVALID_ARGUMENT, "add: size mismatch");
  if (n == 0) return CAI_OK;
  GPU_LAUNCH(grid_stride_blocks(ctx, n), kElementwiseThreads, 0, ctx.stream, add_kernel)
  (static_cast<const float*>(a.data), static_cast<const float*>(b.data), static_cast<float*>(out.data), n);
  return check_launch(err, "add");
}

int swiglu(const Context& ctx, const CaiTensor& gate, const CaiTensor& up, const CaiTensor& out, CaiError* err) {
  const int64_t n = n_elements(gate);
  if (!is_f32(gate) || !is_f32(up) || !is_f32(out) || n_elements(up) != n || n_elements(out) != n)
    return fail(err, CAI_ERR_INVALID_ARGUMENT, "swiglu: size mismatch");
  if (n == 0) return CAI_OK;
  GPU_LAUNCH(grid_stride_blocks(ctx, n), kElementwiseThreads, 0, ctx.stream, swiglu_kernel)
  (static_cast<const float*>(gate.data), static_cast<const float*>(up.data), static_cast<float*>(out.data), n);
  return check_launch(err, "swiglu");
}

int softmax(const Context& ctx, const CaiTensor& x, CaiError* err) {
  if (!is_f32(x)) return fail(err, CAI_ERR_INVALID_ARGUMENT, "softmax: x must be F32");
  if (rows(x) == 0 || cols(x) == 0) return CAI_OK;
  GPU_LAUNCH(static_cast<unsigned>(rows(x)), row_block_threads(cols(x), ctx.warp_size), 0, ctx.stream, softmax_kernel)
  (static_cast<float*>(x.data), cols(x));
  return check_launch(err, "softmax");
}

int copy_cols(const Context& ctx, const CaiTensor& src, int64_t src_col, const CaiTensor& dst, int64_t dst_col,
              int64_t n_cols, CaiError* err) {
  if (rows(src) != rows(dst) || src_col < 0 || dst_col < 0 || n_cols < 0 || src_col + n_cols > cols(src) ||
      dst_col + n_cols > cols(dst) || !is_f32(src) || !is_f32(dst))
    return fail(err, CAI_ERR_INVALID_ARGUMENT, "copy_cols: %lld cols from %s@%lld to %s@%lld",
                static_cast<long long>(n_cols), shape_string(src).c_str(), static_cast<long long>(src_col),
                shape_string(dst).c_str(), static_cast<long long>(dst_col));
  const bool same_rows = src.data == dst.data && cols(src) == cols(dst);
  if (same_rows && src_col != dst_col && src_col < dst_col + n_cols && dst_col < src_col + n_cols)
    return fail(err, CAI_ERR_UNSUPPORTED, "copy_cols: overlapping in-place column ranges");
  if (rows(src) == 0 || n_cols == 0 || (same_rows && src_col == dst_col)) return CAI_OK;
  GPU_LAUNCH(static_cast<unsigned>(rows(src)), row_block_threads(n_cols, ctx.warp_size), 0, ctx.stream,
             copy_cols_kernel)
  (static_cast<const float*>(src.data) + src_col, cols(src), static_cast<float*>(dst.data) + dst_col, cols(dst),
   n_cols);
  return check_launch(err, "copy_cols");
}

int kv_write(const Context& ctx, const CaiTensor& src, const CaiTensor& slots, const CaiTensor& cache, CaiError* err) {
  const int64_t width = cols(src), n_slots = cache.n_dims == 0 ? 0 : dim(cache, 0);
  if (!is_kv_cache_dtype(cache.dtype))
    return fail(err, CAI_ERR_UNSUPPORTED, "kv_write: a cache of dtype %d is not supported (f32, f16 or bf16)",
                cache.dtype);
  if (!is_f32(src) || n_slots == 0 || n_elements(cache) / n_slots != width)
    return fail(err, CAI_ERR_INVALID_ARGUMENT, "kv_write: src %s does not fit cache %s", shape_string(src).c_str(),
                shape_string(cache).c_str());
  if (slots.dtype != CAI_DTYPE_I32 || n_elements(slots) != rows(src))
    return fail(err, CAI_ERR_INVALID_ARGUMENT, "kv_write: slots must be I32 [%lld]", static_cast<long long>(rows(src)));
  if (rows(src) == 0) return CAI_OK;
  GPU_LAUNCH(static_cast<unsigned>(rows(src)), row_block_threads(width, ctx.warp_size), 0, ctx.stream, kv_write_kernel)
  (static_cast<const float*>(src.data), static_cast<const int32_t*>(slots.data), width, n_slots, cache.data,
   cache.dtype);
  return check_launch(err, "kv_write");
}

}  // namespace cai::gpu
