// CUDA-dialect grouped-query attention over a paged F32 / F16 / BF16 KV cache, and the paged-attention core MLA reuses.
#include <type_traits>

#include "hal/cuda/kernels/convert.cuh"
#include "hal/cuda/kernels/launchers.h"
#include "hal/cuda/kernels/paged_attention.cuh"
#include "hal/cuda/kernels/reduce.cuh"
#include "hal/cuda/kernels/tensor_shape.cuh"

namespace cai::gpu {

namespace {

constexpr int kCtxChunk = 64;  // context positions per online-softmax step
constexpr int kCtxPart = 256;  // context positions per partition (one block each), a multiple of kCtxChunk
constexpr int kMaxThreads = 256;
constexpr size_t kPartialBudget = size_t{64} << 20;  // bytes of partition sums one launch aims to stay within
constexpr int kMergeParts = 64;  // partitions whose merge weights one pass of merge_partitions_kernel holds

// How one launch_paged_attention call is cut: partitions per query, and queries per launch pair (kernel + merge) so
// that the partitions' sums of one pair fit kPartialBudget (at least one query at a time).
struct PartitionPlan {
  int n_parts;  // partitions of the longest context
  int rows_per_launch;
  size_t floats_per_row;  // one query's sums over all sequences, heads and partitions
};

PartitionPlan partition_plan(const PagedAttnArgs& a) {
  PartitionPlan p{};
  p.n_parts = (a.max_ctx + kCtxPart - 1) / kCtxPart;
  if (p.n_parts < 1) p.n_parts = 1;
  p.floats_per_row = static_cast<size_t>(a.n_seqs) * a.n_head * p.n_parts * (a.head_dim_v + 2);
  const size_t fit = kPartialBudget / sizeof(float) / p.floats_per_row;
  p.rows_per_launch = static_cast<int>(fit < 1 ? 1 : (fit < static_cast<size_t>(a.max_q) ? fit : a.max_q));
  return p;
}

// Where partition `part` of query (s, j_local)'s head h starts among the sums of a launch of `rows` queries:
// acc[head_dim_v], then m, l.
__device__ __forceinline__ int64_t partial_offset(const PagedAttnArgs& a, int n_parts, int rows, int s, int j_local,
                                                  int h, int part) {
  const int64_t i = ((static_cast<int64_t>(s) * rows + j_local) * a.n_head + h) * n_parts + part;
  return i * (a.head_dim_v + 2);
}

// A block's shared memory: the chunk's slots, its heads' queries, running outputs, chunk probabilities and the
// running max / sum / rescale factor of each head.
struct BlockShared {
  int32_t* slot;  // [kCtxChunk], -1 = skipped
  float* q;       // [hpb, head_dim]
  float* acc;     // [hpb, head_dim_v]
  float* p;       // [hpb, kCtxChunk]
  float* m;       // [hpb]
  float* l;       // [hpb]
  float* alpha;   // [hpb]
};

size_t shared_floats(int hpb, int head_dim, int head_dim_v) {
  return kCtxChunk + static_cast<size_t>(hpb) * (head_dim + head_dim_v + kCtxChunk + 3);
}

__device__ BlockShared carve_shared(float* base, int hpb, int head_dim, int head_dim_v) {
  BlockShared sh;
  sh.slot = reinterpret_cast<int32_t*>(base);
  sh.q = base + kCtxChunk;
  sh.acc = sh.q + hpb * head_dim;
  sh.p = sh.acc + hpb * head_dim_v;
  sh.m = sh.p + hpb * kCtxChunk;
  sh.l = sh.m + hpb;
  sh.alpha = sh.l + hpb;
  return sh;
}

// Slots of context positions c0 .. c0 + n of sequence s.
__device__ void chunk_slots(const PagedAttnArgs& a, int s, int c0, int n, int32_t* slot) {
  const int32_t* table = a.block_tables + static_cast<int64_t>(s) * a.max_blocks;
  for (int t = threadIdx.x; t < n; t += blockDim.x) {
    const int pos = c0 + t, blk = pos / a.block_size;
    const int64_t sl = blk < a.max_blocks ? static_cast<int64_t>(table[blk]) * a.block_size + pos % a.block_size : -1;
    slot[t] = sl >= 0 && sl < a.n_slots ? static_cast<int32_t>(sl) : -1;
  }
}

// p[g, t] = q_g · k_t · scale: one warp per position, lanes across head_dim.
__device__ void chunk_scores(const PagedAttnArgs& a, const BlockShared& sh, int hpb, int kvh, int n) {
  const int n_warps = static_cast<int>(blockDim.x) / gpu_warp_size();
  for (int t = gpu_warp_id(); t < n; t += n_warps) {
    const int32_t slot = sh.slot[t];
    const int64_t k0 = static_cast<int64_t>(slot < 0 ? 0 : slot) * a.k_slot_stride + kvh * a.head_dim;
    for (int g = 0; g < hpb; ++g) {
      float dot = 0.0f;
      if (slot >= 0)
        for (int d = gpu_lane_id(); d < a.head_dim; d += gpu_warp_size())
          dot += sh.q[g * a.head_dim + d] * load_kv(a.k, k0 + d, a.k_dtype);
      dot = warp_sum(dot);
      if (gpu_lane_id() == 0) sh.p[g * kCtxChunk + t] = slot >= 0 ? dot * a.scale : -INFINITY;
    }
  }
}

// Online softmax step per head: new running max, p = exp(score - max), rescale factor of the old sums.
__device__ void chunk_softmax(const BlockShared& sh, int hpb, int n) {
  const int n_warps = static_cast<int>(blockDim.x) / gpu_warp_size();
  for (int g = gpu_warp_id(); g < hpb; g += n_warps) {
    float* p = sh.p + g * kCtxChunk;
    float mx = -INFINITY;
    for (int t = gpu_lane_id(); t < n; t += gpu_warp_size()) mx = fmaxf(mx, p[t]);
    const float m_old = sh.m[g], m_new = fmaxf(m_old, warp_max(mx));
    float sum = 0.0f;
    for (int t = gpu_lane_id(); t < n; t += gpu_warp_size()) {
      const float e = m_new == -INFINITY ? 0.0f : expf(p[t] - m_new);
      p[t] = e;
      sum += e;
    }
    sum = warp_sum(sum);
    if (gpu_lane_id() == 0) {
      const float alpha = m_old == -INFINITY ? 0.0f : expf(m_old - m_new);
      sh.alpha[g] = alpha;
      sh.l[g] = sh.l[g] * alpha + sum;
      sh.m[g] = m_new;
    }
  }
}

// acc[g, d] = acc[g, d] · alpha[g] + Σ_t p[g, t] v_t[d], positions in order; each thread owns whole columns d. The
// values of kVBatch positions are loaded before any is used, so their loads are in flight together.
// VD is a.v_dtype, fixed at compile time so that no dtype branch sits between the batch's loads.
constexpr int kVBatch = 8;
template <int VD>
__device__ void chunk_accumulate(const PagedAttnArgs& a, const BlockShared& sh, int hpb, int kvh, int n) {
  for (int d = threadIdx.x; d < a.head_dim_v; d += blockDim.x) {
    for (int g = 0; g < hpb; ++g) sh.acc[g * a.head_dim_v + d] *= sh.alpha[g];
    for (int t0 = 0; t0 < n; t0 += kVBatch) {
      KvBits<VD> raw[kVBatch];  // all loads first, conversions after: no use of a load before the last one issues
      for (int u = 0; u < kVBatch; ++u) {
        const int32_t slot = t0 + u < n ? sh.slot[t0 + u] : -1;
        const int64_t at = static_cast<int64_t>(slot) * a.v_slot_stride + kvh * a.head_dim_v + d;
        raw[u] = slot < 0 ? KvBits<VD>{} : static_cast<const KvBits<VD>*>(a.v)[at];
      }
      for (int u = 0; u < kVBatch; ++u) {
        const int t = t0 + u;
        if (t >= n || sh.slot[t] < 0) continue;
        const float v = kv_bits_to_f32<VD>(raw[u]);
        for (int g = 0; g < hpb; ++g) sh.acc[g * a.head_dim_v + d] += sh.p[g * kCtxChunk + t] * v;
      }
    }
  }
}

// Grid: (n_parts · n_kv_head · slices, queries q0 .. q0 + gridDim.y, n_seqs); the block serves `hpb` consecutive
// query heads of one kv head over partition blockIdx.x / (n_kv_head · slices) of the context. With one partition it
// writes the outputs, else its unnormalised sums to `partial` for merge_partitions_kernel.
template <int VD>
__global__ void paged_attention_kernel(PagedAttnArgs a, int hpb, int q0, int n_parts, float* partial) {
  GPU_DYNAMIC_SHARED(float, smem);
  const int slices = a.n_head / a.n_kv_head / hpb, head_blocks = a.n_kv_head * slices;
  const int part = static_cast<int>(blockIdx.x) / head_blocks, hb = static_cast<int>(blockIdx.x) % head_blocks;
  const int kvh = hb / slices;
  const int h0 = kvh * (a.n_head / a.n_kv_head) + hb % slices * hpb;
  const int s = static_cast<int>(blockIdx.z), j = q0 + static_cast<int>(blockIdx.y);
  const int32_t q_begin = a.seqs[s * 3], n_q = a.seqs[s * 3 + 1], pos0 = a.seqs[s * 3 + 2];
  const int n_ctx = pos0 + j + 1, begin = part * kCtxPart;
  if (j >= n_q || q_begin < 0 || q_begin + j >= a.n_rows || begin >= n_ctx) return;
  // The last partition takes whatever is left, so a batch whose max_ctx understates a context still covers it.
  const int end = n_ctx - begin <= kCtxPart || part == n_parts - 1 ? n_ctx : begin + kCtxPart;
  const int64_t head_row = (static_cast<int64_t>(q_begin) + j) * a.n_head + h0;
  const BlockShared sh = carve_shared(smem, hpb, a.head_dim, a.head_dim_v);
  for (int i = threadIdx.x; i < hpb * a.head_dim; i += blockDim.x) sh.q[i] = a.q[head_row * a.head_dim + i];
  for (int i = threadIdx.x; i < hpb * a.head_dim_v; i += blockDim.x) sh.acc[i] = 0.0f;
  for (int g = threadIdx.x; g < hpb; g += blockDim.x) {
    sh.m[g] = -INFINITY;
    sh.l[g] = 0.0f;
  }
  for (int c0 = begin; c0 < end; c0 += kCtxChunk) {
    const int n = end - c0 < kCtxChunk ? end - c0 : kCtxChunk;
    __syncthreads();  // the previous chunk is fully accumulated (and q / acc / m / l are set up)
    chunk_slots(a, s, c0, n, sh.slot);
    __syncthreads();
    chunk_scores(a, sh, hpb, kvh, n);
    __syncthreads();
    chunk_softmax(sh, hpb, n);
    __syncthreads();
    chunk_accumulate<VD>(a, sh, hpb, kvh, n);
  }
  __syncthreads();
  if (n_parts == 1) {
    for (int i = threadIdx.x; i < hpb * a.head_dim_v; i += blockDim.x) {
      const float l = sh.l[i / a.head_dim_v];
      a.out[head_row * a.head_dim_v + i] = l > 0.0f ? sh.acc[i] / l : 0.0f;
    }
    return;
  }
  for (int g = 0; g < hpb; ++g) {
    float* dst = partial +
                 partial_offset(a, n_parts, static_cast<int>(gridDim.y), s, static_cast<int>(blockIdx.y), h0 + g, part);
    for (int d = threadIdx.x; d < a.head_dim_v; d += blockDim.x) dst[d] = sh.acc[g * a.head_dim_v + d];
    if (threadIdx.x == 0) {
      dst[a.head_dim_v] = sh.m[g];
      dst[a.head_dim_v + 1] = sh.l[g];
    }
  }
}

// Grid (n_head, queries q0 .. q0 + gridDim.y, n_seqs), head_dim_v floats of dynamic shared memory: out =
// Σ_p acc_p · w_p / Σ_p l_p · w_p with w_p = e^(m_p − M) over the query's partitions p in order, M their largest
// running max (a partition without positions, m_p = −inf, is left out). Each w_p is computed once for all columns,
// kMergeParts at a time. With one partition this is acc / l exactly, as the single-partition path writes it.
__global__ void merge_partitions_kernel(PagedAttnArgs a, int q0, int n_parts, const float* partial) {
  GPU_DYNAMIC_SHARED(float, acc);  // [head_dim_v]: column d is thread d % blockDim.x's alone
  __shared__ float weight[kMergeParts];
  const int h = static_cast<int>(blockIdx.x), s = static_cast<int>(blockIdx.z);
  const int j = q0 + static_cast<int>(blockIdx.y);
  const int32_t q_begin = a.seqs[s * 3], n_q = a.seqs[s * 3 + 1], pos0 = a.seqs[s * 3 + 2];
  if (j >= n_q || q_begin < 0 || q_begin + j >= a.n_rows) return;  // the whole block's
  const int needed = (pos0 + j + 1 + kCtxPart - 1) / kCtxPart, used = needed < n_parts ? needed : n_parts;
  const auto at = [&](int part) {
    return partial + partial_offset(a, n_parts, static_cast<int>(gridDim.y), s, static_cast<int>(blockIdx.y), h, part);
  };
  float mx = -INFINITY;
  for (int p = 0; p < used; ++p) mx = fmaxf(mx, at(p)[a.head_dim_v]);
  for (int d = threadIdx.x; d < a.head_dim_v; d += blockDim.x) acc[d] = 0.0f;
  float l = 0.0f;  // every thread sums it, in the same order
  for (int p0 = 0; p0 < used; p0 += kMergeParts) {
    const int n = used - p0 < kMergeParts ? used - p0 : kMergeParts;
    __syncthreads();  // the previous pass's weights are used up
    for (int i = threadIdx.x; i < n; i += blockDim.x) {
      const float m = at(p0 + i)[a.head_dim_v];
      weight[i] = m == -INFINITY ? 0.0f : expf(m - mx);
    }
    __syncthreads();
    // A zero weight adds nothing (no positions, or e^(m − M) below the smallest float), so it is skipped.
    for (int i = 0; i < n; ++i)
      if (weight[i] != 0.0f) l += at(p0 + i)[a.head_dim_v + 1] * weight[i];
    for (int d = threadIdx.x; d < a.head_dim_v; d += blockDim.x) {
      float sum = acc[d];
      for (int i = 0; i < n; ++i)
        if (weight[i] != 0.0f) sum += at(p0 + i)[d] * weight[i];
      acc[d] = sum;
    }
  }
  float* out = a.out + ((static_cast<int64_t>(q_begin) + j) * a.n_head + h) * a.head_dim_v;
  for (int d = threadIdx.x; d < a.head_dim_v; d += blockDim.x) out[d] = l > 0.0f ? acc[d] / l : 0.0f;
}

// Most query heads of one kv head a block can hold in shared memory (a divisor of the group), or 0.
int heads_per_block(const Context& ctx, int group, int head_dim, int head_dim_v) {
  for (int hpb = group; hpb >= 1; --hpb)
    if (group % hpb == 0 && shared_floats(hpb, head_dim, head_dim_v) * sizeof(float) <= ctx.shared_mem_per_block)
      return hpb;
  return 0;
}

}  // namespace

size_t paged_attention_scratch_bytes(const PagedAttnArgs& a) {
  const PartitionPlan plan = partition_plan(a);
  return plan.n_parts == 1 ? 0 : plan.floats_per_row * static_cast<size_t>(plan.rows_per_launch) * sizeof(float);
}

int launch_paged_attention(const Context& ctx, const PagedAttnArgs& a, void* partial, const char* op, CaiError* err) {
  if (a.max_q > 65535 || a.n_seqs > 65535)
    return fail(err, CAI_ERR_UNSUPPORTED, "%s: %d sequences of up to %d queries exceed the grid", op, a.n_seqs,
                a.max_q);
  if (a.n_seqs == 0 || a.max_q <= 0) return CAI_OK;
  const int group = a.n_head / a.n_kv_head;
  const int hpb = heads_per_block(ctx, group, a.head_dim, a.head_dim_v);
  if (hpb == 0)
    return fail(err, CAI_ERR_UNSUPPORTED, "%s: head dims %d/%d need more than %zu bytes of shared memory", op,
                a.head_dim, a.head_dim_v, ctx.shared_mem_per_block);
  const PartitionPlan plan = partition_plan(a);
  if (plan.n_parts > 1 && !partial)
    return fail(err, CAI_ERR_INTERNAL, "%s: no memory for the context partitions' sums", op);
  const int width = a.head_dim_v > a.head_dim ? a.head_dim_v : a.head_dim;
  const int threads = row_block_threads(width, ctx.warp_size, kMaxThreads);
  const size_t shared = shared_floats(hpb, a.head_dim, a.head_dim_v) * sizeof(float);
  auto* sums = static_cast<float*>(partial);
  for (int q0 = 0; q0 < a.max_q; q0 += plan.rows_per_launch) {
    const auto rows = static_cast<unsigned>(a.max_q - q0 < plan.rows_per_launch ? a.max_q - q0 : plan.rows_per_launch);
    const dim3 grid(static_cast<unsigned>(plan.n_parts * a.n_kv_head * (group / hpb)), rows,
                    static_cast<unsigned>(a.n_seqs));
    const auto attend = [&](auto vd) {
      GPU_LAUNCH(grid, threads, shared, ctx.stream, paged_attention_kernel<decltype(vd)::value>)
      (a, hpb, q0, plan.n_parts, sums);
    };
    if (a.v_dtype == CAI_DTYPE_F32)
      attend(std::integral_constant<int, CAI_DTYPE_F32>{});
    else if (a.v_dtype == CAI_DTYPE_F16)
      attend(std::integral_constant<int, CAI_DTYPE_F16>{});
    else
      attend(std::integral_constant<int, CAI_DTYPE_BF16>{});  // check_kv_cache admits no other
    if (plan.n_parts > 1) {
      GPU_LAUNCH(dim3(static_cast<unsigned>(a.n_head), rows, static_cast<unsigned>(a.n_seqs)),
                 row_block_threads(a.head_dim_v, ctx.warp_size, kMaxThreads),
                 static_cast<size_t>(a.head_dim_v) * sizeof(float), ctx.stream, merge_partitions_kernel)
      (a, q0, plan.n_parts, sums);
    }
  }
  return check_launch(err, op);
}

int check_kv_cache(const CaiTensor& cache, const char* op, const char* what, CaiError* err) {
  if (is_kv_cache_dtype(cache.dtype)) return CAI_OK;
  return fail(err, CAI_ERR_UNSUPPORTED, "%s: a %s of dtype %d is not supported (f32, f16 or bf16)", op, what,
              cache.dtype);
}

int check_attn_batch(const CaiAttnBatch& b, const char* op, CaiError* err) {
  if (b.seqs.dtype != CAI_DTYPE_I32 || b.seqs.n_dims != 2 || b.seqs.shape[1] != 3 ||
      b.block_tables.dtype != CAI_DTYPE_I32 || b.block_tables.n_dims != 2 ||
      b.block_tables.shape[0] != b.seqs.shape[0] || b.max_q < 0 || b.max_ctx < b.max_q)
    return fail(err, CAI_ERR_INVALID_ARGUMENT, "%s: batch seqs %s / block tables %s must be I32 [n, 3] / [n, blocks]",
                op, shape_string(b.seqs).c_str(), shape_string(b.block_tables).c_str());
  return CAI_OK;
}

int attention_gqa(const Context& ctx, const CaiAttentionParams& p, const CaiAttnBatch& batch, const CaiTensor& q,
                  const CaiTensor& k_cache, const CaiTensor& v_cache, const CaiTensor& out, CaiError* err) {
  if (p.n_head <= 0 || p.n_kv_head <= 0 || p.n_head % p.n_kv_head || p.block_size <= 0 || p.head_dim <= 0 ||
      p.head_dim_v <= 0)
    return fail(err, CAI_ERR_INVALID_ARGUMENT, "attention: bad heads %d/%d or block size %d", p.n_head, p.n_kv_head,
                p.block_size);
  if (int rc = check_kv_cache(k_cache, "attention", "k cache", err)) return rc;
  if (int rc = check_kv_cache(v_cache, "attention", "v cache", err)) return rc;
  const int64_t n_slots = k_cache.n_dims == 0 ? 0 : dim(k_cache, 0);
  if (cols(q) != p.head_dim || n_elements(q) / p.head_dim % p.n_head ||
      n_elements(k_cache) != n_slots * p.n_kv_head * p.head_dim ||
      n_elements(v_cache) != n_slots * p.n_kv_head * p.head_dim_v ||
      n_elements(out) != n_elements(q) / p.head_dim * p.head_dim_v || q.dtype != CAI_DTYPE_F32 ||
      out.dtype != CAI_DTYPE_F32)
    return fail(err, CAI_ERR_INVALID_ARGUMENT, "attention: shapes q %s k %s v %s out %s do not match the params",
                shape_string(q).c_str(), shape_string(k_cache).c_str(), shape_string(v_cache).c_str(),
                shape_string(out).c_str());
  if (int rc = check_attn_batch(batch, "attention", err)) return rc;
  PagedAttnArgs a;
  a.q = static_cast<const float*>(q.data);
  a.k = k_cache.data;
  a.v = v_cache.data;
  a.k_dtype = k_cache.dtype;
  a.v_dtype = v_cache.dtype;
  a.out = static_cast<float*>(out.data);
  a.seqs = static_cast<const int32_t*>(batch.seqs.data);
  a.block_tables = static_cast<const int32_t*>(batch.block_tables.data);
  a.n_rows = n_elements(q) / p.head_dim / p.n_head;
  a.n_seqs = static_cast<int32_t>(batch.seqs.shape[0]);
  a.max_blocks = static_cast<int32_t>(batch.block_tables.shape[1]);
  a.max_q = batch.max_q;
  a.block_size = p.block_size;
  a.n_slots = n_slots;
  a.n_head = p.n_head;
  a.n_kv_head = p.n_kv_head;
  a.head_dim = p.head_dim;
  a.head_dim_v = p.head_dim_v;
  a.k_slot_stride = static_cast<int64_t>(p.n_kv_head) * p.head_dim;
  a.v_slot_stride = static_cast<int64_t>(p.n_kv_head) * p.head_dim_v;
  a.scale = p.scale;
  a.max_ctx = batch.max_ctx;
  void* partial = nullptr;
  if (const size_t bytes = paged_attention_scratch_bytes(a); bytes > 0) {
    if (!ctx.scratch) return fail(err, CAI_ERR_INTERNAL, "attention: no scratch memory");
    if (!(partial = ctx.scratch->get(bytes, err))) return CAI_ERR_OUT_OF_MEMORY;
  }
  return launch_paged_attention(ctx, a, partial, "attention", err);
}

}  // namespace cai::gpu
