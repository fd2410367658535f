// CUDA-dialect RoPE: rotates pairs of each head in place (NORM: adjacent pairs, NEOX: split halves), like the CPU.
#include "hal/cuda/kernels/launchers.h"
#include "hal/cuda/kernels/reduce.cuh"
#include "hal/cuda/kernels/tensor_shape.cuh"

namespace cai::gpu {

namespace {

// One block per token: the token's cos/sin table goes to shared memory, then every (head, pair) turns once.
__global__ void rope_kernel(float* x, const int32_t* __restrict__ pos, const float* __restrict__ inv_freq,
                            CaiRopeParams p, int64_t n_head, int64_t head_dim) {
  GPU_DYNAMIC_SHARED(float, table);  // cos [half], then sin [half]
  const int half = p.n_rot / 2;
  const int64_t t = blockIdx.x;
  for (int i = threadIdx.x; i < half; i += blockDim.x) {
    const float angle = static_cast<float>(pos[t]) * inv_freq[i];
    table[i] = cosf(angle) * p.mscale;
    table[half + i] = sinf(angle) * p.mscale;
  }
  __syncthreads();
  for (int64_t k = threadIdx.x; k < n_head * half; k += blockDim.x) {
    const int64_t h = k / half;
    const int i = static_cast<int>(k % half);
    float* v = x + (t * n_head + h) * head_dim + p.rot_offset;
    const int i0 = p.style == CAI_ROPE_NORM ? 2 * i : i;
    const int i1 = p.style == CAI_ROPE_NORM ? 2 * i + 1 : i + half;
    const float a = v[i0], c = v[i1], cs = table[i], sn = table[half + i];
    v[i0] = a * cs - c * sn;
    v[i1] = a * sn + c * cs;
  }
}

}  // namespace

int rope(const Context& ctx, const CaiTensor& x, const CaiTensor& pos, const CaiTensor& inv_freq,
         const CaiRopeParams& p, CaiError* err) {
  if (x.n_dims != 3 || x.dtype != CAI_DTYPE_F32)
    return fail(err, CAI_ERR_INVALID_ARGUMENT, "rope: x must be F32 [n_tok, n_head, head_dim]");
  const int64_t n_tok = x.shape[0], n_head = x.shape[1], head_dim = x.shape[2];
  if (p.n_rot <= 0 || p.rot_offset < 0 || p.rot_offset + p.n_rot > head_dim || p.n_rot % 2 ||
      (p.style != CAI_ROPE_NORM && p.style != CAI_ROPE_NEOX))
    return fail(err, CAI_ERR_INVALID_ARGUMENT, "rope: n_rot %d invalid for head_dim %lld", p.n_rot,
                static_cast<long long>(head_dim));
  if (pos.dtype != CAI_DTYPE_I32 || n_elements(pos) != n_tok)
    return fail(err, CAI_ERR_INVALID_ARGUMENT, "rope: pos must be I32 [%lld]", static_cast<long long>(n_tok));
  if (inv_freq.dtype != CAI_DTYPE_F32 || n_elements(inv_freq) < p.n_rot / 2)
    return fail(err, CAI_ERR_INVALID_ARGUMENT, "rope: inv_freq must be F32 [%d]", p.n_rot / 2);
  if (n_tok == 0 || n_head == 0) return CAI_OK;
  const size_t shared = static_cast<size_t>(p.n_rot) * sizeof(float);
  GPU_LAUNCH(static_cast<unsigned>(n_tok), row_block_threads(n_head * (p.n_rot / 2), ctx.warp_size), shared, ctx.stream,
             rope_kernel)
  (static_cast<float*>(x.data), static_cast<const int32_t*>(pos.data), static_cast<const float*>(inv_freq.data), p,
   n_head, head_dim);
  return check_launch(err, "rope");
}

}  // namespace cai::gpu
