// CUDA-dialect absorbed multi-head latent attention: W_UK into the query, paged attention over the latent (F32, F16
// or BF16), W_UV out.
#include "hal/cuda/kernels/gemm_warp.cuh"
#include "hal/cuda/kernels/paged_attention.cuh"
#include "hal/cuda/kernels/reduce.cuh"
#include "hal/cuda/kernels/tensor_shape.cuh"

namespace cai::gpu {

namespace {

constexpr int kMaxThreads = 256;
constexpr int kRowSlices = 8;  // blocks sharing one head's W_UK / W_UV products (so more SMs stream the weights)

// Where the query row of (sequence blockIdx.z, query blockIdx.y) lives, or -1 past the sequence's queries (or past
// the n_rows rows of q).
__device__ int64_t query_row(const int32_t* seqs, int64_t n_rows) {
  const int32_t* sq = seqs + static_cast<int64_t>(blockIdx.z) * 3;
  const int64_t row = static_cast<int64_t>(sq[0]) + blockIdx.y;
  return static_cast<int>(blockIdx.y) < sq[1] && sq[0] >= 0 && row < n_rows ? row : -1;
}

// dst[o] = (row row0 + o of w) · x for o in [o_begin, o_end), x n_in long in shared memory: each warp takes
// kLoadBatch outputs at a time (their chunks' loads in flight together), lanes across 8-column chunks of the rows.
template <int D>
__device__ void head_rows_dot(const WeightView& w, int64_t row0, int o_begin, int o_end, int n_in, const float* x,
                              float* dst) {
  const int n_warps = static_cast<int>(blockDim.x) / gpu_warp_size(), n_chunks = n_in / kChunk;
  for (int o0 = o_begin + gpu_warp_id() * kLoadBatch; o0 < o_end; o0 += n_warps * kLoadBatch) {
    int64_t rows[kLoadBatch];  // past o_end: the last row again, unstored
    for (int u = 0; u < kLoadBatch; ++u) rows[u] = row0 + (o0 + u < o_end ? o0 + u : o_end - 1);
    float dot[kLoadBatch] = {};
    for (int c = gpu_lane_id(); c < n_chunks; c += gpu_warp_size()) {
      float wc[kLoadBatch][kChunk];
      for (int u = 0; u < kLoadBatch; ++u) decode_chunk<D>(w, rows[u], static_cast<int64_t>(c) * kChunk, wc[u]);
      for (int u = 0; u < kLoadBatch; ++u)
        for (int k = 0; k < kChunk; ++k) dot[u] += wc[u][k] * x[c * kChunk + k];
    }
    for (int col = n_chunks * kChunk + gpu_lane_id(); col < n_in; col += gpu_warp_size())
      for (int u = 0; u < kLoadBatch; ++u) dot[u] += weight_at(w, rows[u], col) * x[col];
    for (int u = 0; u < kLoadBatch; ++u) {
      dot[u] = warp_sum(dot[u]);
      if (gpu_lane_id() == 0 && o0 + u < o_end) dst[o0 + u] = dot[u];
    }
  }
}

// Blocks [h · kRowSlices, (h + 1) · kRowSlices) of the grid's x share head h's n_out output rows; this block's share.
__device__ __forceinline__ void row_slice(int n_out, int* h, int* begin, int* end) {
  const int slice = static_cast<int>(blockIdx.x) % kRowSlices;
  *h = static_cast<int>(blockIdx.x) / kRowSlices;
  *begin = n_out * slice / kRowSlices;
  *end = n_out * (slice + 1) / kRowSlices;
}

// Grid (n_head · kRowSlices, max_q, n_seqs). q_abs[row, h] = [W_UK_h^T q_nope | q_rope]: column c of the latent is
// q_nope's dot with w_uk row (h, c).
template <int D>
__global__ void mla_absorb_q_kernel(CaiMlaParams p, const float* __restrict__ q, WeightView w_uk,
                                    const int32_t* __restrict__ seqs, int64_t n_rows, float* __restrict__ q_abs) {
  GPU_DYNAMIC_SHARED(float, q_nope);  // [qk_nope]
  const int64_t row = query_row(seqs, n_rows);
  if (row < 0) return;
  int h, begin, end;
  row_slice(p.kv_lora, &h, &begin, &end);
  const int qk = p.qk_nope + p.qk_rope, width = p.kv_lora + p.qk_rope;
  const float* qh = q + (row * p.n_head + h) * qk;
  float* dst = q_abs + (row * p.n_head + h) * width;
  for (int i = threadIdx.x; i < p.qk_nope; i += blockDim.x) q_nope[i] = qh[i];
  if (blockIdx.x % kRowSlices == 0)
    for (int r = threadIdx.x; r < p.qk_rope; r += blockDim.x) dst[p.kv_lora + r] = qh[p.qk_nope + r];
  __syncthreads();
  head_rows_dot<D>(w_uk, static_cast<int64_t>(h) * p.kv_lora, begin, end, p.qk_nope, q_nope, dst);
}

// Grid (n_head · kRowSlices, max_q, n_seqs). out[row, h, v] = W_UV_h[v] · o_lat[row, h].
template <int D>
__global__ void mla_project_out_kernel(CaiMlaParams p, const float* __restrict__ o_lat, WeightView w_uv,
                                       const int32_t* __restrict__ seqs, int64_t n_rows, float* __restrict__ out) {
  GPU_DYNAMIC_SHARED(float, lat);  // [kv_lora]
  const int64_t row = query_row(seqs, n_rows);
  if (row < 0) return;
  int h, begin, end;
  row_slice(p.v_head_dim, &h, &begin, &end);
  const float* src = o_lat + (row * p.n_head + h) * p.kv_lora;
  for (int c = threadIdx.x; c < p.kv_lora; c += blockDim.x) lat[c] = src[c];
  __syncthreads();
  head_rows_dot<D>(w_uv, static_cast<int64_t>(h) * p.v_head_dim, begin, end, p.kv_lora, lat,
                   out + (row * p.n_head + h) * p.v_head_dim);
}

int check_mla_args(const CaiMlaParams& p, const CaiTensor& q, const CaiTensor& w_uk, const CaiTensor& w_uv,
                   const CaiTensor& latent, const CaiTensor& out, CaiError* err) {
  if (int rc = check_weight(w_uk, 2, "attention_mla", "w_uk", err)) return rc;
  if (int rc = check_weight(w_uv, 2, "attention_mla", "w_uv", err)) return rc;
  if (int rc = check_kv_cache(latent, "attention_mla", "latent cache", err)) return rc;
  const int qk = p.qk_nope + p.qk_rope;
  if (p.n_head <= 0 || p.block_size <= 0 || p.qk_nope <= 0 || p.qk_rope < 0 || p.v_head_dim <= 0 || p.kv_lora <= 0 ||
      w_uk.shape[0] != static_cast<int64_t>(p.n_head) * p.kv_lora || w_uk.shape[1] != p.qk_nope ||
      w_uv.shape[0] != static_cast<int64_t>(p.n_head) * p.v_head_dim || w_uv.shape[1] != p.kv_lora ||
      cols(latent) != p.kv_lora + p.qk_rope || n_elements(q) % (static_cast<int64_t>(p.n_head) * qk) ||
      n_elements(out) != n_elements(q) / qk * p.v_head_dim || q.dtype != CAI_DTYPE_F32 || out.dtype != CAI_DTYPE_F32)
    return fail(err, CAI_ERR_INVALID_ARGUMENT,
                "attention_mla: q %s w_uk %s w_uv %s latent %s out %s do not match the params", shape_string(q).c_str(),
                shape_string(w_uk).c_str(), shape_string(w_uv).c_str(), shape_string(latent).c_str(),
                shape_string(out).c_str());
  return CAI_OK;
}

// The paged-attention core over the latent cache: one kv head of width kv_lora + qk_rope shared by every head,
// values = the first kv_lora columns of the same rows.
// The queries (q) and outputs (out) are left for the caller.
PagedAttnArgs latent_attention_args(const CaiMlaParams& p, const CaiAttnBatch& batch, int64_t n_rows,
                                    const CaiTensor& latent) {
  PagedAttnArgs a;
  a.k = latent.data;
  a.v = a.k;
  a.k_dtype = latent.dtype;
  a.v_dtype = latent.dtype;
  a.seqs = static_cast<const int32_t*>(batch.seqs.data);
  a.block_tables = static_cast<const int32_t*>(batch.block_tables.data);
  a.n_rows = n_rows;
  a.n_seqs = static_cast<int32_t>(batch.seqs.shape[0]);
  a.max_blocks = static_cast<int32_t>(batch.block_tables.shape[1]);
  a.max_q = batch.max_q;
  a.max_ctx = batch.max_ctx;
  a.block_size = p.block_size;
  a.n_slots = rows(latent);
  a.n_head = p.n_head;
  a.n_kv_head = 1;
  a.head_dim = p.kv_lora + p.qk_rope;
  a.head_dim_v = p.kv_lora;
  a.k_slot_stride = a.head_dim;
  a.v_slot_stride = a.head_dim;
  a.scale = p.scale;
  return a;
}

}  // namespace

int attention_mla(const Context& ctx, const CaiMlaParams& p, const CaiAttnBatch& batch, const CaiTensor& q,
                  const CaiTensor& w_uk, const CaiTensor& w_uv, const CaiTensor& latent, const CaiTensor& out,
                  CaiError* err) {
  if (int rc = check_mla_args(p, q, w_uk, w_uv, latent, out, err)) return rc;
  if (int rc = check_attn_batch(batch, "attention_mla", err)) return rc;
  if (batch.seqs.shape[0] == 0 || batch.max_q <= 0) return CAI_OK;
  if (batch.max_q > 65535 || batch.seqs.shape[0] > 65535)
    return fail(err, CAI_ERR_UNSUPPORTED, "attention_mla: %lld sequences of up to %d queries exceed the grid",
                static_cast<long long>(batch.seqs.shape[0]), batch.max_q);
  const int64_t n_rows = n_elements(q) / (int64_t{p.n_head} * (p.qk_nope + p.qk_rope)), head_rows = n_rows * p.n_head;
  const size_t abs_floats = static_cast<size_t>(head_rows) * static_cast<size_t>(p.kv_lora + p.qk_rope);
  const size_t lat_floats = static_cast<size_t>(head_rows) * static_cast<size_t>(p.kv_lora);
  PagedAttnArgs lat = latent_attention_args(p, batch, n_rows, latent);
  const size_t part_bytes = paged_attention_scratch_bytes(lat);
  if (!ctx.scratch) return fail(err, CAI_ERR_INTERNAL, "attention_mla: no scratch memory");
  float* q_abs = static_cast<float*>(ctx.scratch->get((abs_floats + lat_floats) * sizeof(float) + part_bytes, err));
  if (!q_abs) return CAI_ERR_OUT_OF_MEMORY;
  float* o_lat = q_abs + abs_floats;
  lat.q = q_abs;
  lat.out = o_lat;
  const int32_t* seqs = static_cast<const int32_t*>(batch.seqs.data);
  const dim3 grid(static_cast<unsigned>(p.n_head * kRowSlices), static_cast<unsigned>(batch.max_q),
                  static_cast<unsigned>(batch.seqs.shape[0]));
  // A warp per kLoadBatch rows of a block's slice.
  const auto slice_threads = [&](int n_out) {
    const int64_t warps = (n_out + kRowSlices * kLoadBatch - 1) / (kRowSlices * kLoadBatch);
    return row_block_threads(warps * ctx.warp_size, ctx.warp_size, kMaxThreads);
  };
  const int threads = slice_threads(p.kv_lora);
  dispatch_weight_dtype(w_uk.dtype, [&](auto d) {
    GPU_LAUNCH(grid, threads, static_cast<size_t>(p.qk_nope) * sizeof(float), ctx.stream,
               mla_absorb_q_kernel<decltype(d)::value>)
    (p, static_cast<const float*>(q.data), weight_view(w_uk), seqs, n_rows, q_abs);
  });
  if (int rc = check_launch(err, "attention_mla")) return rc;
  if (int rc = launch_paged_attention(ctx, lat, part_bytes ? o_lat + lat_floats : nullptr, "attention_mla", err))
    return rc;
  dispatch_weight_dtype(w_uv.dtype, [&](auto d) {
    GPU_LAUNCH(grid, slice_threads(p.v_head_dim), static_cast<size_t>(p.kv_lora) * sizeof(float), ctx.stream,
               mla_project_out_kernel<decltype(d)::value>)
    (p, o_lat, weight_view(w_uv), seqs, n_rows, static_cast<float*>(out.data));
  });
  return check_launch(err, "attention_mla");
}

}  // namespace cai::gpu
