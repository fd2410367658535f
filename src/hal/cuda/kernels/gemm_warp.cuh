// Warp-per-weight-row dot products against up to N activation rows: the bandwidth-shaped core of the decode GEMV
// (gemm.cu) and of the grouped expert GEMMs (moe_experts.cu). One fixed reduction order per output element.
#pragma once

#include "hal/cuda/kernels/dequant.cuh"
#include "hal/cuda/kernels/reduce.cuh"

namespace cai::gpu {

// acc[j] = Σ_c w[row, c] · xs[j][c] for j < N, in every lane of the calling warp. Lane l accumulates chunks l,
// l + warp, ... in order (then the tail columns), and the warp combines lanes with a butterfly, so the result does
// not depend on N or on which other rows are computed alongside.
template <int N>
__device__ inline void warp_dot_rows(const WeightView& w, int64_t row, const float* const* xs, float* acc) {
  for (int j = 0; j < N; ++j) acc[j] = 0.0f;
  const int lane = gpu_lane_id(), width = gpu_warp_size();
  const int64_t n_chunks = w.cols / kChunk;
  float v[kChunk];
  for (int64_t c = lane; c < n_chunks; c += width) {
    decode_chunk(w, row, c * kChunk, v);
    for (int j = 0; j < N; ++j) {
      const float* x = xs[j] + c * kChunk;
      for (int k = 0; k < kChunk; ++k) acc[j] += v[k] * x[k];
    }
  }
  for (int64_t col = n_chunks * kChunk + lane; col < w.cols; col += width) {
    const float wv = weight_at(w, row, col);
    for (int j = 0; j < N; ++j) acc[j] += wv * xs[j][col];
  }
  for (int j = 0; j < N; ++j) acc[j] = warp_sum(acc[j]);
}

}  // namespace cai::gpu
