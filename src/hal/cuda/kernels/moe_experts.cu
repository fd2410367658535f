// CUDA-dialect sparse_moe: tokens grouped by expert on the device (count, prefix sum, scatter), grouped expert
// GEMVs (gate and up fused with swiglu, then down) and a per-token weighted combine in a fixed order.
#include <algorithm>
#include <utility>

#include "hal/cuda/kernels/gemm_warp.cuh"
#include "hal/cuda/kernels/tensor_shape.cuh"

namespace cai::gpu {

namespace {

constexpr int kMoeWarps = 4;       // warps per expert GEMV block, split into row groups
constexpr int kMoeMaxSplits = 16;  // blocks sharing one expert's token groups (gridDim.z)
constexpr int kMoeThreads = 128;   // threads of the routing and combine kernels

// Position g within a segment of `count`, clamped to its last one (a padded group row recomputes it, unstored).
__device__ __forceinline__ int last_at(int g, int count) { return g < count ? g : count - 1; }

// Device temporaries, carved from one scratch region. Slot i = t · top_k + k is routed token t's k-th choice.
struct MoeScratch {
  int* counts;   // [E] slots per expert
  int* cursor;   // [E] scatter cursors
  int* offsets;  // [E] first position of each expert's segment
  int* active;   // [E + 1] how many experts have positions, then those experts in index order
  int* perm;     // [n_slots] position -> slot, grouped by expert
  int* inv;      // [n_slots] slot -> position, or -1 for an id outside [0, E)
  float* act;    // [n_slots, ffn] swiglu(gate, up) per position
  float* down;   // [n_slots, hidden] expert output per position
};

// Ids are the layer's; this stack holds experts [first, first + n_experts) (expert parallelism: one rank's range).
__global__ void moe_count_kernel(const int32_t* __restrict__ ids, int n_slots, int first, int n_experts, int* counts) {
  for (int i = static_cast<int>(blockIdx.x * blockDim.x + threadIdx.x); i < n_slots;
       i += static_cast<int>(gridDim.x * blockDim.x)) {
    const int e = ids[i] - first;
    if (e >= 0 && e < n_experts) atomicAdd(&counts[e], 1);
  }
}

// Exclusive prefix sum of the counts and the list of experts with positions (one thread: E is a few hundred at most).
__global__ void moe_offsets_kernel(const int* __restrict__ counts, int n_experts, int* __restrict__ offsets,
                                   int* __restrict__ active) {
  if (threadIdx.x != 0) return;
  int sum = 0, n_active = 0;
  for (int e = 0; e < n_experts; ++e) {
    const int c = counts[e];
    offsets[e] = sum;
    sum += c;
    if (c > 0) active[1 + n_active++] = e;
  }
  active[0] = n_active;
}

// Positions within a segment follow atomic order; every position is computed the same way, so results do not
// depend on it.
__global__ void moe_scatter_kernel(const int32_t* __restrict__ ids, int n_slots, int first, int n_experts,
                                   MoeScratch s) {
  for (int i = static_cast<int>(blockIdx.x * blockDim.x + threadIdx.x); i < n_slots;
       i += static_cast<int>(gridDim.x * blockDim.x)) {
    const int e = ids[i] - first;
    if (e < 0 || e >= n_experts) {
      s.inv[i] = -1;
      continue;
    }
    const int pos = s.offsets[e] + atomicAdd(&s.cursor[e], 1);
    s.perm[pos] = i;
    s.inv[i] = pos;
  }
}

// Geometry of one expert GEMV launch: row groups of group_warps warps, one weight row each.
struct MoeRows {
  int group_warps;  // warps sharing one weight row (row_group_warps of its columns)
  bool x16;         // activation rows allow 16-byte loads
};

// The weight row this thread's group computes, and the thread's index in the group.
__device__ __forceinline__ int64_t group_row(const MoeRows& g, int* t) {
  const int width = g.group_warps * gpu_warp_size();
  *t = static_cast<int>(threadIdx.x) % width;
  return static_cast<int64_t>(blockIdx.x) * (kMoeWarps / g.group_warps) + static_cast<int>(threadIdx.x) / width;
}

// The expert of grid row blockIdx.y: the blockIdx.y-th with positions, or -1 past them.
__device__ __forceinline__ int grid_expert(const MoeScratch& s) {
  return static_cast<int>(blockIdx.y) < s.active[0] ? s.active[1 + blockIdx.y] : -1;
}

// act[pos, f] = silu(gate_e[f] · x[t]) · (up_e[f] · x[t]) for every position of expert e = grid_expert; one row group
// per row f, groups of N positions split over gridDim.z blocks.
template <int D, int N>
__global__ void moe_gate_up_kernel(WeightView gate0, WeightView up0, const float* __restrict__ x, int top_k,
                                   MoeRows geo, MoeScratch s) {
  __shared__ float partial[kMoeWarps][N];
  const int e = grid_expert(s);
  if (e < 0) return;  // the whole block's
  const int count = s.counts[e], base = s.offsets[e];
  int t;
  const int64_t f = group_row(geo, &t);
  const bool live = f < gate0.rows;
  const WeightView gate = expert_view(gate0, e), up = expert_view(up0, e);
  const int width = geo.group_warps * gpu_warp_size();
  for (int g = static_cast<int>(blockIdx.z) * N; g < count; g += static_cast<int>(gridDim.z) * N) {
    const float* xs[N];
    for (int j = 0; j < N; ++j)
      xs[j] = x + static_cast<int64_t>(s.perm[base + last_at(g + j, count)] / top_k) * gate.cols;
    float ga[N] = {}, ua[N] = {};
    if (live) {
      thread_dot_rows<D, N>(gate, f, xs, geo.x16, t, width, ga);
      thread_dot_rows<D, N>(up, f, xs, geo.x16, t, width, ua);
    }
    group_sum<N>(ga, geo.group_warps, partial);
    group_sum<N>(ua, geo.group_warps, partial);
    if (!live || t != 0) continue;
    for (int j = 0; j < N && g + j < count; ++j)
      s.act[static_cast<int64_t>(base + g + j) * gate.rows + f] = ga[j] / (1.0f + expf(-ga[j])) * ua[j];
  }
}

// down[pos, c] = down_e[c] · act[pos] for every position of expert e = grid_expert; one row group per output column c.
template <int D, int N>
__global__ void moe_down_kernel(WeightView down0, MoeRows geo, MoeScratch s) {
  __shared__ float partial[kMoeWarps][N];
  const int e = grid_expert(s);
  if (e < 0) return;
  const int count = s.counts[e], base = s.offsets[e];
  int t;
  const int64_t c = group_row(geo, &t);
  const bool live = c < down0.rows;
  const WeightView down = expert_view(down0, e);
  const int width = geo.group_warps * gpu_warp_size();
  for (int g = static_cast<int>(blockIdx.z) * N; g < count; g += static_cast<int>(gridDim.z) * N) {
    const float* xs[N];
    for (int j = 0; j < N; ++j) xs[j] = s.act + static_cast<int64_t>(base + last_at(g + j, count)) * down.cols;
    float acc[N] = {};
    if (live) thread_dot_rows<D, N>(down, c, xs, geo.x16, t, width, acc);
    group_sum<N>(acc, geo.group_warps, partial);
    if (!live || t != 0) continue;
    for (int j = 0; j < N && g + j < count; ++j) s.down[static_cast<int64_t>(base + g + j) * down.rows + c] = acc[j];
  }
}

// out[t, c] = Σ_k weights[t, k] · down[inv[t, k], c], k in index order (skipped ids contribute nothing).
// Grid (tokens, column blocks).
__global__ void moe_combine_kernel(const float* __restrict__ weights, int top_k, int64_t hidden, MoeScratch s,
                                   float* __restrict__ out) {
  const int64_t t = blockIdx.x;
  for (int64_t c = static_cast<int64_t>(blockIdx.y) * blockDim.x + threadIdx.x; c < hidden;
       c += static_cast<int64_t>(gridDim.y) * blockDim.x) {
    float sum = 0.0f;
    for (int k = 0; k < top_k; ++k) {
      const int pos = s.inv[t * top_k + k];
      if (pos >= 0) sum += weights[t * top_k + k] * s.down[static_cast<int64_t>(pos) * hidden + c];
    }
    out[t * hidden + c] = sum;
  }
}

int check_moe_args(const CaiExpertWeights& w, const CaiTensor& x, const CaiTensor& ids, const CaiTensor& weights,
                   const CaiTensor& out, CaiError* err) {
  for (const auto& [t, name] : {std::pair{&w.gate, "gate"}, std::pair{&w.up, "up"}, std::pair{&w.down, "down"}})
    if (int rc = check_weight(*t, 3, "sparse_moe", name, err); rc != CAI_OK) return rc;
  const int64_t n_exp = w.gate.shape[0], ffn = w.gate.shape[1], hidden = w.gate.shape[2];
  const bool same_up = w.up.shape[0] == n_exp && w.up.shape[1] == ffn && w.up.shape[2] == hidden;
  const bool down_ok = w.down.shape[0] == n_exp && w.down.shape[1] == hidden && w.down.shape[2] == ffn;
  if (!same_up || !down_ok || n_exp < 1 || n_exp > 65535)
    return fail(err, CAI_ERR_INVALID_ARGUMENT, "sparse_moe: gate %s up %s down %s", shape_string(w.gate).c_str(),
                shape_string(w.up).c_str(), shape_string(w.down).c_str());
  if (x.dtype != CAI_DTYPE_F32 || out.dtype != CAI_DTYPE_F32 || weights.dtype != CAI_DTYPE_F32 ||
      ids.dtype != CAI_DTYPE_I32)
    return fail(err, CAI_ERR_INVALID_ARGUMENT, "sparse_moe: x, weights, out must be F32 and ids I32");
  const int64_t n = rows(x);
  if (cols(x) != hidden || rows(out) != n || cols(out) != hidden || rows(ids) != n || rows(weights) != n ||
      cols(weights) != cols(ids))
    return fail(err, CAI_ERR_INVALID_ARGUMENT, "sparse_moe: x %s ids %s weights %s out %s (hidden %lld)",
                shape_string(x).c_str(), shape_string(ids).c_str(), shape_string(weights).c_str(),
                shape_string(out).c_str(), static_cast<long long>(hidden));
  if (n * cols(ids) > 0x7FFFFFFF)
    return fail(err, CAI_ERR_INVALID_ARGUMENT, "sparse_moe: %lld routed slots is too many",
                static_cast<long long>(n * cols(ids)));
  return CAI_OK;
}

size_t align_up(size_t n) { return (n + 255) & ~static_cast<size_t>(255); }

// Carves the temporaries out of one scratch region (the two int [E] arrays zeroed first are adjacent).
int carve_scratch(const Context& ctx, int64_t n_exp, int64_t n_slots, int64_t ffn, int64_t hidden, MoeScratch* s,
                  CaiError* err) {
  const size_t e_bytes = align_up(static_cast<size_t>(n_exp + 1) * sizeof(int));
  const size_t slot_bytes = align_up(static_cast<size_t>(n_slots) * sizeof(int));
  const size_t act_bytes = align_up(static_cast<size_t>(n_slots * ffn) * sizeof(float));
  const size_t down_bytes = align_up(static_cast<size_t>(n_slots * hidden) * sizeof(float));
  if (!ctx.scratch) return fail(err, CAI_ERR_INTERNAL, "sparse_moe: the context has no scratch memory");
  auto* base = static_cast<uint8_t*>(ctx.scratch->get(4 * e_bytes + 2 * slot_bytes + act_bytes + down_bytes, err));
  if (!base) return CAI_ERR_OUT_OF_MEMORY;
  s->counts = reinterpret_cast<int*>(base);
  s->cursor = reinterpret_cast<int*>(base + e_bytes);
  s->offsets = reinterpret_cast<int*>(base + 2 * e_bytes);
  s->active = reinterpret_cast<int*>(base + 3 * e_bytes);
  s->perm = reinterpret_cast<int*>(base + 4 * e_bytes);
  s->inv = reinterpret_cast<int*>(base + 4 * e_bytes + slot_bytes);
  s->act = reinterpret_cast<float*>(base + 4 * e_bytes + 2 * slot_bytes);
  s->down = reinterpret_cast<float*>(base + 4 * e_bytes + 2 * slot_bytes + act_bytes);
  if (gpuMemsetAsync(base, 0, 2 * e_bytes, ctx.stream) != gpuSuccess)
    return fail(err, CAI_ERR_INTERNAL, "sparse_moe: clearing the expert counters failed");
  return CAI_OK;
}

}  // namespace

int sparse_moe(const Context& ctx, const CaiExpertWeights& w, const CaiTensor& x, const CaiTensor& ids,
               const CaiTensor& weights, const CaiTensor& out, CaiError* err) {
  if (int rc = check_moe_args(w, x, ids, weights, out, err); rc != CAI_OK) return rc;
  const int64_t n_exp = w.gate.shape[0], ffn = w.gate.shape[1], hidden = w.gate.shape[2];
  const int top_k = static_cast<int>(cols(ids)), n_slots = static_cast<int>(rows(x) * top_k);
  if (rows(x) == 0 || hidden == 0) return CAI_OK;
  if (n_slots == 0 || ffn == 0) {  // no expert contributes
    if (gpuMemsetAsync(out.data, 0, static_cast<size_t>(rows(x) * hidden) * sizeof(float), ctx.stream) != gpuSuccess)
      return fail(err, CAI_ERR_INTERNAL, "sparse_moe: clearing out failed");
    return CAI_OK;
  }
  MoeScratch s{};
  if (int rc = carve_scratch(ctx, n_exp, n_slots, ffn, hidden, &s, err); rc != CAI_OK) return rc;
  const auto* id_p = static_cast<const int32_t*>(ids.data);
  const int route_blocks = static_cast<int>((n_slots + kMoeThreads - 1) / kMoeThreads);
  const int e32 = static_cast<int>(n_exp);
  GPU_LAUNCH(dim3(route_blocks), dim3(kMoeThreads), 0, ctx.stream, moe_count_kernel)
  (id_p, n_slots, w.expert_begin, e32, s.counts);
  GPU_LAUNCH(dim3(1), dim3(1), 0, ctx.stream, moe_offsets_kernel)(s.counts, e32, s.offsets, s.active);
  GPU_LAUNCH(dim3(route_blocks), dim3(kMoeThreads), 0, ctx.stream, moe_scatter_kernel)
  (id_p, n_slots, w.expert_begin, e32, s);
  // Grid rows for as many experts as can have positions (which ones is only known on the device: grid_expert); a
  // pass over a weight row serves up to N of an expert's positions, N sized to the batch (each sum's order does not
  // depend on it), and an expert's groups are split over blocks as a token's share of them would need.
  const int n_rows = pass_rows(rows(x));
  const auto expert_rows = static_cast<unsigned>(std::min<int64_t>(n_exp, n_slots));
  const int splits = static_cast<int>(std::min<int64_t>(kMoeMaxSplits, (rows(x) + n_rows - 1) / n_rows));
  const dim3 block(kMoeWarps * ctx.warp_size);
  const auto geometry = [&](int64_t cols, const float* act) {
    return MoeRows{row_group_warps(cols, ctx.warp_size, kMoeWarps), rows_16b_aligned(act, cols)};
  };
  const auto row_blocks = [](int64_t r, const MoeRows& g) {
    const int per_block = kMoeWarps / g.group_warps;
    return static_cast<unsigned>((r + per_block - 1) / per_block);
  };
  const MoeRows up_rows = geometry(hidden, static_cast<const float*>(x.data)), down_rows = geometry(ffn, s.act);
  const int gate_dtype = w.gate.dtype == w.up.dtype ? w.gate.dtype : kAnyDtype;
  with_pass_rows(n_rows, [&](auto rows_c) {
    constexpr int N = decltype(rows_c)::value;
    dispatch_weight_dtype(gate_dtype, [&](auto d) {
      GPU_LAUNCH(dim3(row_blocks(ffn, up_rows), expert_rows, splits), block, 0, ctx.stream,
                 moe_gate_up_kernel<decltype(d)::value, N>)
      (weight_view(w.gate), weight_view(w.up), static_cast<const float*>(x.data), top_k, up_rows, s);
    });
    dispatch_weight_dtype(w.down.dtype, [&](auto d) {
      GPU_LAUNCH(dim3(row_blocks(hidden, down_rows), expert_rows, splits), block, 0, ctx.stream,
                 moe_down_kernel<decltype(d)::value, N>)
      (weight_view(w.down), down_rows, s);
    });
  });
  const auto col_blocks = static_cast<unsigned>(std::min<int64_t>(65535, (hidden + kMoeThreads - 1) / kMoeThreads));
  GPU_LAUNCH(dim3(static_cast<unsigned>(rows(x)), col_blocks), dim3(kMoeThreads), 0, ctx.stream, moe_combine_kernel)
  (static_cast<const float*>(weights.data), top_k, hidden, s, static_cast<float*>(out.data));
  return check_launch(err, "sparse_moe");
}

}  // namespace cai::gpu
