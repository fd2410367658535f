// CPU grouped-query attention over a paged F32 / F16 / BF16 / Q8_0 KV cache; one work item per (query token, KV head):
// the query heads sharing that KV head read each K and V row once.
#include <algorithm>
#include <cmath>
#include <vector>

#include "hal/cpu/kernels/kernels.h"

namespace cai::hal::cpu {

namespace {

struct WorkItem {
  int32_t seq;
  int32_t j;  // query index within the sequence
};

Status check_attention_args(const AttentionParams& p, const TensorView& q, const TensorView& k_cache,
                            const TensorView& v_cache, const TensorView& out) {
  if (p.n_head <= 0 || p.n_kv_head <= 0 || p.n_head % p.n_kv_head || p.block_size <= 0)
    return invalid_argument("attention: bad heads {}/{} or block size {}", p.n_head, p.n_kv_head, p.block_size);
  if (q.cols() != p.head_dim || q.n_elements() / p.head_dim % p.n_head ||
      k_cache.n_elements() != k_cache.dim(0) * p.n_kv_head * p.head_dim ||
      v_cache.n_elements() != v_cache.dim(0) * p.n_kv_head * p.head_dim_v ||
      out.n_elements() != q.n_elements() / p.head_dim * p.head_dim_v)
    return invalid_argument("attention: shapes q {} k {} v {} out {} do not match the params", q.shape_string(),
                            k_cache.shape_string(), v_cache.shape_string(), out.shape_string());
  return {};
}

}  // namespace

Status attention_gqa(const OpContext& ctx, const AttentionParams& p, const AttnBatch& batch, const TensorView& q,
                     const TensorView& k_cache, const TensorView& v_cache, const TensorView& out) {
  CAI_TRY(check_kv_parts("attention_gqa", k_cache.dtype, {p.head_dim}));
  CAI_TRY(check_kv_parts("attention_gqa", v_cache.dtype, {p.head_dim_v}));
  CAI_TRY(check_attention_args(p, q, k_cache, v_cache, out));
  const std::vector<AttnSeq> seqs = batch.host_seqs();
  std::vector<WorkItem> items;
  for (int s = 0; s < static_cast<int>(seqs.size()); ++s)
    for (int32_t j = 0; j < seqs[s].n_q; ++j) items.push_back({s, j});
  const int group = p.n_head / p.n_kv_head;
  const int64_t n_items = static_cast<int64_t>(items.size()) * p.n_kv_head;
  parallel_rows(ctx, n_items, 1, [&](int64_t b, int64_t e) {
    std::vector<float> scores;  // [group][n_ctx]
    std::vector<float> acc(static_cast<size_t>(group * p.head_dim_v)),
        buf(static_cast<size_t>(p.block_size) * std::max(p.head_dim, p.head_dim_v));
    for (int64_t it = b; it < e; ++it) {
      const WorkItem& w = items[static_cast<size_t>(it / p.n_kv_head)];
      const int kvh = static_cast<int>(it % p.n_kv_head), h0 = kvh * group;
      const AttnSeq& sq = seqs[static_cast<size_t>(w.seq)];
      const int64_t row = sq.q_begin + w.j;
      const float* q0 = q.as<const float>() + (row * p.n_head + h0) * p.head_dim;  // the group's heads, consecutive
      const int32_t n_ctx = sq.pos0 + w.j + 1;
      scores.resize(static_cast<size_t>(group) * n_ctx);
      // The cache block of positions t0 .. t0 + nt − 1: its K (V) rows of this KV head, one cache row apart.
      const auto block_rows = [&](const TensorView& cache, int width, int32_t t0) {
        const int64_t slot0 = static_cast<int64_t>(sq.block_table[t0 / p.block_size]) * p.block_size;
        return KvRows{&cache, (slot0 * p.n_kv_head + kvh) * width, static_cast<int64_t>(p.n_kv_head) * width,
                      std::min(p.block_size, n_ctx - t0)};
      };
      for (int32_t t0 = 0; t0 < n_ctx; t0 += p.block_size)
        kv_dot_block(block_rows(k_cache, p.head_dim, t0), p.head_dim, q0, p.head_dim, group, scores.data() + t0, n_ctx,
                     buf.data());
      for (float& s : scores) s *= p.scale;
      for (int g = 0; g < group; ++g) softmax_row(scores.data() + static_cast<size_t>(g) * n_ctx, n_ctx);
      std::fill(acc.begin(), acc.end(), 0.0f);
      for (int32_t t0 = 0; t0 < n_ctx; t0 += p.block_size)
        kv_axpy_block(block_rows(v_cache, p.head_dim_v, t0), p.head_dim_v, scores.data() + t0, n_ctx, group, acc.data(),
                      p.head_dim_v, buf.data());
      std::copy(acc.begin(), acc.end(), out.as<float>() + (row * p.n_head + h0) * p.head_dim_v);
    }
  });
  return {};
}

}  // namespace cai::hal::cpu
