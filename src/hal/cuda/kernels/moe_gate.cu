// CUDA-dialect MoE router (DeepSeek gate): scores, group-limited top-k, normalisation; same float maths as the CPU.
#include "hal/cuda/kernels/launchers.h"
#include "hal/cuda/kernels/reduce.cuh"
#include "hal/cuda/kernels/tensor_shape.cuh"

namespace cai::gpu {

namespace {

// A candidate of an argmax: larger value first, ties → lower id (the CPU gate's order).
struct Candidate {
  float v;
  int id;
};

__device__ __forceinline__ bool better(Candidate a, Candidate b) { return a.v > b.v || (a.v == b.v && a.id < b.id); }

__device__ __forceinline__ Candidate warp_best(Candidate c) {
  for (int offset = gpu_warp_size() / 2; offset > 0; offset /= 2) {
    const Candidate o{gpu_shfl_xor(c.v, offset), gpu_shfl_xor(c.id, offset)};
    if (better(o, c)) c = o;
  }
  return c;
}

// The best of v[0..n) not yet in picked[0..k); every thread gets it. part_v / part_id: GPU_MAX_WARPS shared slots.
__device__ Candidate block_best(const float* v, int n, const int* picked, int k, float* part_v, int* part_id) {
  Candidate c{-INFINITY, 0x7fffffff};
  for (int e = threadIdx.x; e < n; e += blockDim.x) {
    bool taken = false;
    for (int i = 0; i < k; ++i) taken = taken || picked[i] == e;
    if (!taken && better(Candidate{v[e], e}, c)) c = Candidate{v[e], e};
  }
  c = warp_best(c);
  __syncthreads();
  if (gpu_lane_id() == 0) {
    part_v[gpu_warp_id()] = c.v;
    part_id[gpu_warp_id()] = c.id;
  }
  __syncthreads();
  c = Candidate{part_v[0], part_id[0]};
  for (int w = 1; w < static_cast<int>(blockDim.x) / gpu_warp_size(); ++w)
    if (better(Candidate{part_v[w], part_id[w]}, c)) c = Candidate{part_v[w], part_id[w]};
  return c;
}

// score[e] = sigmoid(l) or softmax(l) (the softmax sum in expert order, as the CPU adds it).
__device__ void gate_scores(const CaiMoeGateParams& p, const float* l, float* score, float* partials) {
  if (p.sigmoid) {
    for (int e = threadIdx.x; e < p.n_experts; e += blockDim.x) score[e] = 1.0f / (1.0f + expf(-l[e]));
    __syncthreads();
    return;
  }
  float mx = -INFINITY;
  for (int e = threadIdx.x; e < p.n_experts; e += blockDim.x) mx = fmaxf(mx, l[e]);
  mx = block_max(mx, partials);
  for (int e = threadIdx.x; e < p.n_experts; e += blockDim.x) score[e] = expf(l[e] - mx);
  __syncthreads();
  if (threadIdx.x == 0) {
    float sum = 0.0f;
    for (int e = 0; e < p.n_experts; ++e) sum += score[e];
    partials[0] = sum;
  }
  __syncthreads();
  const float sum = partials[0];
  for (int e = threadIdx.x; e < p.n_experts; e += blockDim.x) score[e] /= sum;
  __syncthreads();
}

// Keeps only the best topk_group groups: the others' biased scores become -inf. Group score: sum of the two best
// biased scores when a bias is given (V3), else the best one (V2).
__device__ void limit_groups(const CaiMoeGateParams& p, bool has_bias, float* biased, float* group_score,
                             int* kept_groups, float* part_v, int* part_id) {
  const int per_group = p.n_experts / p.n_group;
  for (int g = threadIdx.x; g < p.n_group; g += blockDim.x) {
    float best = -INFINITY, second = -INFINITY;
    for (int e = g * per_group; e < (g + 1) * per_group; ++e) {
      if (biased[e] > best) {
        second = best;
        best = biased[e];
      } else if (biased[e] > second) {
        second = biased[e];
      }
    }
    group_score[g] = has_bias && per_group >= 2 ? best + second : best;
  }
  __syncthreads();
  for (int k = 0; k < p.topk_group; ++k) {
    const Candidate c = block_best(group_score, p.n_group, kept_groups, k, part_v, part_id);
    if (threadIdx.x == 0) kept_groups[k] = c.id;
    __syncthreads();
  }
  for (int e = threadIdx.x; e < p.n_experts; e += blockDim.x) {
    bool kept = false;
    for (int k = 0; k < p.topk_group; ++k) kept = kept || kept_groups[k] == e / per_group;
    if (!kept) biased[e] = -INFINITY;
  }
  __syncthreads();
}

// One block per token. Shared: score [E], biased [E], group scores [n_group], kept groups [topk_group], picked [top_k].
__global__ void moe_gate_kernel(CaiMoeGateParams p, const float* __restrict__ logits, const float* __restrict__ bias,
                                int32_t* __restrict__ ids, float* __restrict__ weights) {
  GPU_DYNAMIC_SHARED(float, smem);
  __shared__ float part_v[GPU_MAX_WARPS];
  __shared__ int part_id[GPU_MAX_WARPS];
  float* score = smem;
  float* biased = score + p.n_experts;
  float* group_score = biased + p.n_experts;
  int* kept_groups = reinterpret_cast<int*>(group_score + p.n_group);
  int* picked = kept_groups + p.topk_group;
  const int64_t t = blockIdx.x;
  gate_scores(p, logits + t * p.n_experts, score, part_v);
  for (int e = threadIdx.x; e < p.n_experts; e += blockDim.x) biased[e] = score[e] + (bias ? bias[e] : 0.0f);
  __syncthreads();
  if (p.n_group > 1 && p.topk_group < p.n_group)
    limit_groups(p, bias != nullptr, biased, group_score, kept_groups, part_v, part_id);
  for (int k = 0; k < p.top_k; ++k) {
    const Candidate c = block_best(biased, p.n_experts, picked, k, part_v, part_id);
    if (threadIdx.x == 0) picked[k] = c.id;
    __syncthreads();
  }
  if (threadIdx.x != 0) return;
  float sum = 0.0f;
  for (int k = 0; k < p.top_k; ++k) sum += score[picked[k]];
  for (int k = 0; k < p.top_k; ++k) {
    ids[t * p.top_k + k] = picked[k];
    weights[t * p.top_k + k] = score[picked[k]] / (p.norm_topk_prob ? sum : 1.0f) * p.routed_scaling;
  }
}

}  // namespace

int moe_gate(const Context& ctx, const CaiMoeGateParams& p, const CaiTensor& logits, const CaiTensor* bias,
             const CaiTensor& ids, const CaiTensor& weights, CaiError* err) {
  const int64_t n = rows(logits);
  if (p.n_experts <= 0 || cols(logits) != p.n_experts || p.n_group <= 0 || p.n_experts % p.n_group || p.top_k <= 0 ||
      p.topk_group <= 0 || p.topk_group > p.n_group || p.top_k > p.topk_group * (p.n_experts / p.n_group))
    return fail(err, CAI_ERR_INVALID_ARGUMENT, "moe_gate: %d experts, top-%d, %d groups keeping %d: inconsistent",
                p.n_experts, p.top_k, p.n_group, p.topk_group);
  if (n_elements(ids) != n * p.top_k || n_elements(weights) != n * p.top_k || ids.dtype != CAI_DTYPE_I32 ||
      weights.dtype != CAI_DTYPE_F32 || logits.dtype != CAI_DTYPE_F32)
    return fail(err, CAI_ERR_INVALID_ARGUMENT, "moe_gate: ids/weights must be [%lld, %d]", static_cast<long long>(n),
                p.top_k);
  if (bias && (n_elements(*bias) != p.n_experts || bias->dtype != CAI_DTYPE_F32))
    return fail(err, CAI_ERR_INVALID_ARGUMENT, "moe_gate: bias must have %d values", p.n_experts);
  if (n == 0) return CAI_OK;
  const size_t shared = (2 * static_cast<size_t>(p.n_experts) + static_cast<size_t>(p.n_group)) * sizeof(float) +
                        static_cast<size_t>(p.topk_group + p.top_k) * sizeof(int);
  if (shared > ctx.shared_mem_per_block)
    return fail(err, CAI_ERR_UNSUPPORTED, "moe_gate: %d experts need %zu bytes of shared memory", p.n_experts, shared);
  GPU_LAUNCH(static_cast<unsigned>(n), row_block_threads(p.n_experts, ctx.warp_size), shared, ctx.stream,
             moe_gate_kernel)
  (p, static_cast<const float*>(logits.data), bias ? static_cast<const float*>(bias->data) : nullptr,
   static_cast<int32_t*>(ids.data), static_cast<float*>(weights.data));
  return check_launch(err, "moe_gate");
}

}  // namespace cai::gpu
