// Warp and block reductions for the CUDA-dialect kernels, in a fixed order for a given block and warp width.
#pragma once

#include "hal/cuda/dialect.h"

namespace cai::gpu {

struct SumOp {
  __device__ __forceinline__ float operator()(float a, float b) const { return a + b; }
};
struct MaxOp {
  __device__ __forceinline__ float operator()(float a, float b) const { return fmaxf(a, b); }
};

// Reduces v over the whole warp (butterfly); every lane gets the result.
template <class Op>
__device__ __forceinline__ float warp_reduce(float v, Op op) {
  for (int offset = gpu_warp_size() / 2; offset > 0; offset /= 2) v = op(v, gpu_shfl_xor(v, offset));
  return v;
}

__device__ __forceinline__ float warp_sum(float v) { return warp_reduce(v, SumOp{}); }
__device__ __forceinline__ float warp_max(float v) { return warp_reduce(v, MaxOp{}); }

// Reduces v over the block (blockDim.x a multiple of the warp width); every thread gets the result. `partials` is
// GPU_MAX_WARPS floats of shared memory; the call starts and ends with a barrier so it may be reused at once.
template <class Op>
__device__ __forceinline__ float block_reduce(float v, float* partials, Op op) {
  v = warp_reduce(v, op);
  const int n_warps = static_cast<int>(blockDim.x) / gpu_warp_size();
  __syncthreads();
  if (gpu_lane_id() == 0) partials[gpu_warp_id()] = v;
  __syncthreads();
  float r = partials[0];
  for (int w = 1; w < n_warps; ++w) r = op(r, partials[w]);
  __syncthreads();
  return r;
}

__device__ __forceinline__ float block_sum(float v, float* partials) { return block_reduce(v, partials, SumOp{}); }
__device__ __forceinline__ float block_max(float v, float* partials) { return block_reduce(v, partials, MaxOp{}); }

// Threads per block for a row-wise kernel over `width` values: a multiple of the warp width, at most max_threads.
inline int row_block_threads(int64_t width, int warp_size, int max_threads = 256) {
  const int64_t warps = (width + warp_size - 1) / warp_size;
  const int64_t capped = warps < 1 ? 1 : (warps > max_threads / warp_size ? max_threads / warp_size : warps);
  return static_cast<int>(capped) * warp_size;
}

}  // namespace cai::gpu
