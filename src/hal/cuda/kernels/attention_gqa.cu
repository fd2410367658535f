// CUDA-dialect grouped-query attention over a paged F32 / F16 / BF16 KV cache, and the paged-attention core MLA reuses.
#include "hal/cuda/kernels/convert.cuh"
#include "hal/cuda/kernels/launchers.h"
#include "hal/cuda/kernels/paged_attention.cuh"
#include "hal/cuda/kernels/reduce.cuh"
#include "hal/cuda/kernels/tensor_shape.cuh"

namespace cai::gpu {

namespace {

constexpr int kCtxChunk = 64;  // context positions per online-softmax step
constexpr int kMaxThreads = 256;

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

// acc[g, d] = acc[g, d] · alpha[g] + Σ_t p[g, t] v_t[d], positions in order; each thread owns whole columns d.
__device__ void chunk_accumulate(const PagedAttnArgs& a, const BlockShared& sh, int hpb, int kvh, int n) {
  for (int d = threadIdx.x; d < a.head_dim_v; d += blockDim.x) {
    for (int g = 0; g < hpb; ++g) sh.acc[g * a.head_dim_v + d] *= sh.alpha[g];
    for (int t = 0; t < n; ++t) {
      if (sh.slot[t] < 0) continue;
      const int64_t at = static_cast<int64_t>(sh.slot[t]) * a.v_slot_stride + kvh * a.head_dim_v + d;
      const float v = load_kv(a.v, at, a.v_dtype);
      for (int g = 0; g < hpb; ++g) sh.acc[g * a.head_dim_v + d] += sh.p[g * kCtxChunk + t] * v;
    }
  }
}

// Grid: (n_kv_head · slices, max_q, n_seqs); the block serves `hpb` consecutive query heads of one kv head.
__global__ void paged_attention_kernel(PagedAttnArgs a, int hpb) {
  GPU_DYNAMIC_SHARED(float, smem);
  const int slices = a.n_head / a.n_kv_head / hpb;
  const int kvh = static_cast<int>(blockIdx.x) / slices;
  const int h0 = kvh * (a.n_head / a.n_kv_head) + static_cast<int>(blockIdx.x) % slices * hpb;
  const int s = static_cast<int>(blockIdx.z), j = static_cast<int>(blockIdx.y);
  const int32_t q_begin = a.seqs[s * 3], n_q = a.seqs[s * 3 + 1], pos0 = a.seqs[s * 3 + 2];
  if (j >= n_q || q_begin < 0 || q_begin + j >= a.n_rows) return;
  const int64_t head_row = (static_cast<int64_t>(q_begin) + j) * a.n_head + h0;
  const BlockShared sh = carve_shared(smem, hpb, a.head_dim, a.head_dim_v);
  for (int i = threadIdx.x; i < hpb * a.head_dim; i += blockDim.x) sh.q[i] = a.q[head_row * a.head_dim + i];
  for (int i = threadIdx.x; i < hpb * a.head_dim_v; i += blockDim.x) sh.acc[i] = 0.0f;
  for (int g = threadIdx.x; g < hpb; g += blockDim.x) {
    sh.m[g] = -INFINITY;
    sh.l[g] = 0.0f;
  }
  const int n_ctx = pos0 + j + 1;
  for (int c0 = 0; c0 < n_ctx; c0 += kCtxChunk) {
    const int n = n_ctx - c0 < kCtxChunk ? n_ctx - c0 : kCtxChunk;
    __syncthreads();  // the previous chunk is fully accumulated (and q / acc / m / l are set up)
    chunk_slots(a, s, c0, n, sh.slot);
    __syncthreads();
    chunk_scores(a, sh, hpb, kvh, n);
    __syncthreads();
    chunk_softmax(sh, hpb, n);
    __syncthreads();
    chunk_accumulate(a, sh, hpb, kvh, n);
  }
  __syncthreads();
  for (int i = threadIdx.x; i < hpb * a.head_dim_v; i += blockDim.x) {
    const float l = sh.l[i / a.head_dim_v];
    a.out[head_row * a.head_dim_v + i] = l > 0.0f ? sh.acc[i] / l : 0.0f;
  }
}

// Most query heads of one kv head a block can hold in shared memory (a divisor of the group), or 0.
int heads_per_block(const Context& ctx, int group, int head_dim, int head_dim_v) {
  for (int hpb = group; hpb >= 1; --hpb)
    if (group % hpb == 0 && shared_floats(hpb, head_dim, head_dim_v) * sizeof(float) <= ctx.shared_mem_per_block)
      return hpb;
  return 0;
}

}  // namespace

int launch_paged_attention(const Context& ctx, const PagedAttnArgs& a, const char* op, CaiError* err) {
  if (a.max_q > 65535 || a.n_seqs > 65535)
    return fail(err, CAI_ERR_UNSUPPORTED, "%s: %d sequences of up to %d queries exceed the grid", op, a.n_seqs,
                a.max_q);
  if (a.n_seqs == 0 || a.max_q <= 0) return CAI_OK;
  const int group = a.n_head / a.n_kv_head;
  const int hpb = heads_per_block(ctx, group, a.head_dim, a.head_dim_v);
  if (hpb == 0)
    return fail(err, CAI_ERR_UNSUPPORTED, "%s: head dims %d/%d need more than %zu bytes of shared memory", op,
                a.head_dim, a.head_dim_v, ctx.shared_mem_per_block);
  const dim3 grid(static_cast<unsigned>(a.n_kv_head * (group / hpb)), static_cast<unsigned>(a.max_q),
                  static_cast<unsigned>(a.n_seqs));
  const int width = a.head_dim_v > a.head_dim ? a.head_dim_v : a.head_dim;
  const size_t shared = shared_floats(hpb, a.head_dim, a.head_dim_v) * sizeof(float);
  GPU_LAUNCH(grid, row_block_threads(width, ctx.warp_size, kMaxThreads), shared, ctx.stream, paged_attention_kernel)
  (a, hpb);
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
  return launch_paged_attention(ctx, a, "attention", err);
}

}  // namespace cai::gpu
