// Row-group dot products of one weight row against up to N activation rows: the bandwidth-shaped core of the decode
// GEMV (gemm.cu) and of the grouped expert GEMMs (moe_experts.cu). One fixed reduction order per output element.
//
// Decode reads every weight byte once, so what matters is how many bytes are in flight: each thread decodes
// kLoadBatch chunks before it multiplies, and for the dtypes dispatch_weight_dtype names the decoder is
// straight-line code (no run-time switch between one chunk's loads and the next's), so all of a batch's loads issue
// together. Activations are read 16 bytes at a time where their rows allow it.
#pragma once

#include <type_traits>

#include "hal/cuda/kernels/dequant.cuh"
#include "hal/cuda/kernels/reduce.cuh"

namespace cai::gpu {

inline constexpr int kLoadBatch = 4;      // chunks a thread decodes before it multiplies them
inline constexpr int kMaxGroupWarps = 4;  // most warps one weight row is split over

// Calls f(std::integral_constant<int, D>{}) with D = dtype for the dtypes models carry most bytes in, kAnyDtype for
// the others (their decode stays correct, only slower).
template <class F>
void dispatch_weight_dtype(int dtype, F&& f) {
  switch (dtype) {
    case CAI_DTYPE_F32: return f(std::integral_constant<int, CAI_DTYPE_F32>{});
    case CAI_DTYPE_F16: return f(std::integral_constant<int, CAI_DTYPE_F16>{});
    case CAI_DTYPE_BF16: return f(std::integral_constant<int, CAI_DTYPE_BF16>{});
    case CAI_DTYPE_F8_E4M3: return f(std::integral_constant<int, CAI_DTYPE_F8_E4M3>{});
    case CAI_DTYPE_Q8_0: return f(std::integral_constant<int, CAI_DTYPE_Q8_0>{});
    case CAI_DTYPE_Q4_0: return f(std::integral_constant<int, CAI_DTYPE_Q4_0>{});
    case CAI_DTYPE_Q4_K: return f(std::integral_constant<int, CAI_DTYPE_Q4_K>{});
    case CAI_DTYPE_Q5_K: return f(std::integral_constant<int, CAI_DTYPE_Q5_K>{});
    case CAI_DTYPE_Q6_K: return f(std::integral_constant<int, CAI_DTYPE_Q6_K>{});
    default: return f(std::integral_constant<int, kAnyDtype>{});
  }
}

inline constexpr int kMaxPassRows = 8;  // most activation rows one pass over a weight row serves

// Activation rows a pass serves for a batch of n: 1, 2, 4 or kMaxPassRows.
inline int pass_rows(int64_t n) { return n >= kMaxPassRows ? kMaxPassRows : (n > 2 ? 4 : static_cast<int>(n)); }

// Calls f(std::integral_constant<int, N>{}) with N = rows, a value pass_rows gives.
template <class F>
void with_pass_rows(int rows, F&& f) {
  switch (rows) {
    case 1: return f(std::integral_constant<int, 1>{});
    case 2: return f(std::integral_constant<int, 2>{});
    case 4: return f(std::integral_constant<int, 4>{});
    default: return f(std::integral_constant<int, kMaxPassRows>{});
  }
}

// Warps sharing one weight row of `cols` columns: the fewest (up to kMaxGroupWarps, and no more than a block of
// block_warps holds) that leave each thread at most kLoadBatch chunks. A function of the shape only, so a row's
// reduction order does not depend on the batch.
inline int row_group_warps(int64_t cols, int warp_size, int block_warps) {
  const int64_t chunks = cols / kChunk;
  int g = 1;
  while (g < kMaxGroupWarps && g < block_warps && chunks > static_cast<int64_t>(g) * warp_size * kLoadBatch) g *= 2;
  return g;
}

// Whether activation rows at x, `cols` floats apart, can be read 16 bytes at a time at every chunk.
inline bool rows_16b_aligned(const float* x, int64_t cols) {
  return reinterpret_cast<uintptr_t>(x) % 16 == 0 && cols % 4 == 0;
}

// acc[j] += Σ_k v[k] · x[k] over one 8-column chunk, in k order.
__device__ __forceinline__ void dot_chunk(const float* v, const float* x, bool x16, float& acc) {
  float xv[kChunk];
  if (x16) {
    load_f32x8(x, xv);
  } else {
    for (int k = 0; k < kChunk; ++k) xv[k] = x[k];
  }
  for (int k = 0; k < kChunk; ++k) acc += v[k] * xv[k];
}

// This thread's share of w[row] · xs[j] for j < N: thread t of a group of `width` takes chunks t, t + width, ... in
// ascending order, then the tail columns the same way. Sum the group's threads with group_sum.
template <int D, int N>
__device__ inline void thread_dot_rows(const WeightView& w, int64_t row, const float* const* xs, bool x16, int t,
                                       int width, float* acc) {
  for (int j = 0; j < N; ++j) acc[j] = 0.0f;
  const int64_t n_chunks = w.cols / kChunk;
  for (int64_t c0 = t; c0 < n_chunks; c0 += static_cast<int64_t>(kLoadBatch) * width) {
    float v[kLoadBatch][kChunk];
    for (int u = 0; u < kLoadBatch; ++u) {  // past the row's end: its last chunk again, unused (no branch here)
      const int64_t c = c0 + static_cast<int64_t>(u) * width;
      decode_chunk<D>(w, row, (c < n_chunks ? c : n_chunks - 1) * kChunk, v[u]);
    }
    for (int u = 0; u < kLoadBatch; ++u) {
      const int64_t c = c0 + static_cast<int64_t>(u) * width;
      if (c >= n_chunks) break;
      for (int j = 0; j < N; ++j) dot_chunk(v[u], xs[j] + c * kChunk, x16, acc[j]);
    }
  }
  for (int64_t col = n_chunks * kChunk + t; col < w.cols; col += width) {
    const float wv = weight_at(w, row, col);
    for (int j = 0; j < N; ++j) acc[j] += wv * xs[j][col];
  }
}

// Sums the partials of a row group of group_warps consecutive warps (the block's warps split evenly into groups):
// each warp with a butterfly, then the group's warps in order through `partial`. Every thread of the block calls it
// (it holds barriers when group_warps > 1); the group's first thread gets the sums, other threads garbage.
template <int N>
__device__ inline void group_sum(float* acc, int group_warps, float (*partial)[N]) {
  for (int j = 0; j < N; ++j) acc[j] = warp_sum(acc[j]);
  if (group_warps == 1) return;
  const int warp = gpu_warp_id();
  __syncthreads();
  if (gpu_lane_id() == 0)
    for (int j = 0; j < N; ++j) partial[warp][j] = acc[j];
  __syncthreads();
  if (warp % group_warps != 0 || gpu_lane_id() != 0) return;
  for (int g = 1; g < group_warps; ++g)
    for (int j = 0; j < N; ++j) acc[j] += partial[warp + g][j];
}

}  // namespace cai::gpu
