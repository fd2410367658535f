// CPU multi-head latent attention for prompts, the way a prefill pays: the absorbed form (attention_mla.cpp) moves
// each query into the latent space and reads 2·kv_lora + qk_rope values per (query, row, head); expanded, each cached
// latent row goes through kv_b once, into every head's k_nope and v, and a (query, row, head) costs qk_nope + qk_rope
// + v_head_dim. Absorbing a query costs what expanding a row does, so expansion wins whenever the rows a sequence
// adds now are most of its context (a prompt): for DeepSeek-V2/V3, 320 instead of 1,088 per pair.
#include "hal/cpu/kernels/attention_mla_expanded.h"

#include <algorithm>
#include <vector>

#include "core/thread_pool.h"
#include "hal/cpu/kernels/gemm.h"
#include "hal/cpu/kernels/gemm_kernels.h"

namespace cai::hal::cpu {

namespace {

constexpr int kQueriesPerItem = 16;                              // queries of one head per work item
constexpr int64_t kMaxExpandedBytes = int64_t{64} << 20;  // k_nope and v of every head for the whole context

}  // namespace

bool mla_expansion_pays(const MlaParams& p, int64_t n_q, int64_t pos0) {
  const int64_t per_head = p.qk_nope + p.v_head_dim, n_ctx = pos0 + n_q;
  if (n_ctx * p.n_head * per_head * static_cast<int64_t>(sizeof(float)) > kMaxExpandedBytes) return false;
  // Expanding a row and absorbing a query each cost kv_lora · n_head · per_head; the pairs save the difference.
  const int64_t row_cost = static_cast<int64_t>(p.kv_lora) * p.n_head * per_head;
  const int64_t pairs = n_q * pos0 + n_q * (n_q + 1) / 2;
  const int64_t saved_per_pair =
      static_cast<int64_t>(2 * p.kv_lora + p.qk_rope - (p.qk_nope + p.qk_rope + p.v_head_dim)) * p.n_head;
  return pos0 * row_cost < pairs * saved_per_pair;
}

Status attention_mla_expanded(const OpContext& ctx, const MlaParams& p, const AttnSeq& sq, const TensorView& q,
                              const TensorView& kv_b, const TensorView& latent, const TensorView& out) {
  const int width = p.kv_lora + p.qk_rope, per_head = p.qk_nope + p.v_head_dim, qk = p.qk_nope + p.qk_rope;
  const int64_t n_ctx = static_cast<int64_t>(sq.pos0) + sq.n_q, ld_kv = static_cast<int64_t>(p.n_head) * per_head;
  // The context's latent rows (c_kv, k_rope) as floats, then c_kv · kv_bᵀ: row t holds [k_nope | v] of every head.
  thread_local std::vector<float> c_kv, k_rope, kv;
  c_kv.resize(static_cast<size_t>(n_ctx * p.kv_lora));
  k_rope.resize(static_cast<size_t>(n_ctx * p.qk_rope));
  kv.resize(static_cast<size_t>(n_ctx * ld_kv));
  for (int64_t t0 = 0; t0 < n_ctx; t0 += p.block_size) {
    const int64_t slot0 = static_cast<int64_t>(sq.block_table[t0 / p.block_size]) * p.block_size;
    KvRows rows{&latent, slot0 * width, width, static_cast<int>(std::min<int64_t>(p.block_size, n_ctx - t0))};
    kv_read_rows(rows, p.kv_lora, c_kv.data() + t0 * p.kv_lora, p.kv_lora);
    rows.elem0 += p.kv_lora;
    kv_read_rows(rows, p.qk_rope, k_rope.data() + t0 * p.qk_rope, p.qk_rope);
  }
  CAI_TRY(cpu_dense_gemm(ctx, kv_b, TensorView::make(c_kv.data(), DType::kF32, {n_ctx, p.kv_lora}), nullptr,
                         TensorView::make(kv.data(), DType::kF32, {n_ctx, ld_kv})));

  // (The workers read the scratch through these: a lambda names this thread's thread_local, not the caller's.)
  const float* kv_rows = kv.data();
  const float* rope_rows = k_rope.data();
  // Work items: (head, tile of queries). A query's scores are its dots with the rows it sees, the rest of the tile's
  // rows weigh zero, so what it gets does not depend on its tile.
  const int64_t ld_q = static_cast<int64_t>(p.n_head) * qk, ld_out = static_cast<int64_t>(p.n_head) * p.v_head_dim;
  const int64_t n_tiles = (sq.n_q + kQueriesPerItem - 1) / kQueriesPerItem;
  parallel_rows(ctx, p.n_head * n_tiles, 1, [&](int64_t b, int64_t e) {
    const GemmKernels& k = active_gemm_kernels();
    std::vector<float> scores, rope_scores;
    for (int64_t it = b; it < e; ++it) {
      const int h = static_cast<int>(it % p.n_head), j0 = static_cast<int>(it / p.n_head) * kQueriesPerItem;
      const int nj = std::min(kQueriesPerItem, sq.n_q - j0);
      const int rows = sq.pos0 + j0 + nj;  // what the tile's last query sees
      scores.resize(static_cast<size_t>(nj) * rows);
      rope_scores.resize(scores.size());
      const float* q0 = q.as<const float>() + ((sq.q_begin + j0) * ld_q) + static_cast<int64_t>(h) * qk;
      k.rows_dot(q0, ld_q, nj, kv_rows + static_cast<int64_t>(h) * per_head, ld_kv, rows, p.qk_nope, scores.data(),
                 rows);
      k.rows_dot(q0 + p.qk_nope, ld_q, nj, rope_rows, p.qk_rope, rows, p.qk_rope, rope_scores.data(), rows);
      float* o0 = out.as<float>() + (sq.q_begin + j0) * ld_out + static_cast<int64_t>(h) * p.v_head_dim;
      for (int j = 0; j < nj; ++j) {
        const int seen = sq.pos0 + j0 + j + 1;
        float* s = scores.data() + static_cast<size_t>(j) * rows;
        const float* r = rope_scores.data() + static_cast<size_t>(j) * rows;
        for (int t = 0; t < seen; ++t) s[t] = (s[t] + r[t]) * p.scale;
        softmax_row(s, seen);
        std::fill(s + seen, s + rows, 0.0f);
        std::fill(o0 + j * ld_out, o0 + j * ld_out + p.v_head_dim, 0.0f);
      }
      k.rows_axpy(scores.data(), rows, nj, kv_rows + static_cast<int64_t>(h) * per_head + p.qk_nope, ld_kv, rows,
                  p.v_head_dim, o0, ld_out);
    }
  });
  return {};
}

}  // namespace cai::hal::cpu
