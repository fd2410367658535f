// CPU multi-head latent attention for prompts, the way a prefill pays: the absorbed form (attention_mla.cpp) moves
// each query into the latent space and reads 2·kv_lora + qk_rope values per (query, row, head); expanded, each cached
// latent row goes through W_UK and W_UV once, into every head's k_nope and v, and a (query, row, head) costs qk_nope +
// qk_rope + v_head_dim. Absorbing a query costs what expanding a row does, so expansion wins whenever the rows a
// sequence adds now are most of its context (a prompt): for DeepSeek-V2/V3, 320 instead of 1,088 per pair.
#include "hal/cpu/kernels/attention_mla_expanded.h"

#include <algorithm>
#include <vector>

#include "core/thread_pool.h"
#include "hal/cpu/kernels/kernels.h"
#include "hal/cpu/kernels/gemm_kernels.h"

namespace cai::hal::cpu {

namespace {

constexpr int kQueriesPerItem = 16;                       // queries of one head per work item
constexpr int64_t kMaxExpandedBytes = int64_t{64} << 20;  // k_nope and v of every head for the whole context

// W_UK and W_UV as F32 rows over the latent, [n_head · qk_nope, kv_lora] (head h's k_nope row i = column i of w_uk's
// rows (h, ·)) and [n_head · v_head_dim, kv_lora], for one exact GEMM each that expands every latent row at once.
// Decoding them costs about what absorbing one query does (mla_expansion_pays counts it).
void unpack_w_uk_w_uv(const OpContext& ctx, const MlaParams& p, const TensorView& w_uk, const TensorView& w_uv,
                      float* uk, float* uv) {
  parallel_rows(ctx, p.n_head, 1, [&](int64_t b, int64_t e) {
    std::vector<float> rows(static_cast<size_t>(p.kv_lora) * p.qk_nope);
    for (int64_t h = b; h < e; ++h) {
      const float* src = weight_rows_f32(w_uk, h * p.kv_lora, p.kv_lora, rows.data());
      float* head = uk + h * p.qk_nope * p.kv_lora;
      for (int c = 0; c < p.kv_lora; ++c)
        for (int i = 0; i < p.qk_nope; ++i) head[static_cast<int64_t>(i) * p.kv_lora + c] = src[c * p.qk_nope + i];
      float* v_rows = uv + h * p.v_head_dim * p.kv_lora;
      const float* v_src = weight_rows_f32(w_uv, h * p.v_head_dim, p.v_head_dim, v_rows);
      if (v_src != v_rows) std::copy_n(v_src, static_cast<int64_t>(p.v_head_dim) * p.kv_lora, v_rows);
    }
  });
}

}  // namespace

bool mla_expansion_pays(const MlaParams& p, int64_t n_q, int64_t pos0) {
  const int64_t per_head = p.qk_nope + p.v_head_dim, n_ctx = pos0 + n_q;
  if (n_ctx * p.n_head * per_head * static_cast<int64_t>(sizeof(float)) > kMaxExpandedBytes) return false;
  // Expanding a row and absorbing a query each cost kv_lora · n_head · per_head (decoding W_UK and W_UV for the
  // expansion about as much); the pairs save the difference.
  const int64_t row_cost = static_cast<int64_t>(p.kv_lora) * p.n_head * per_head;
  const int64_t pairs = n_q * pos0 + n_q * (n_q + 1) / 2;
  const int64_t saved_per_pair =
      static_cast<int64_t>(2 * p.kv_lora + p.qk_rope - (p.qk_nope + p.qk_rope + p.v_head_dim)) * p.n_head;
  return (pos0 + 1) * row_cost < pairs * saved_per_pair;
}

Status attention_mla_expanded(const OpContext& ctx, const MlaParams& p, const AttnSeq& sq, const TensorView& q,
                              const TensorView& w_uk, const TensorView& w_uv, const TensorView& latent,
                              const TensorView& out) {
  const int width = p.kv_lora + p.qk_rope, qk = p.qk_nope + p.qk_rope;
  const int64_t n_ctx = static_cast<int64_t>(sq.pos0) + sq.n_q;
  const int64_t ld_k = static_cast<int64_t>(p.n_head) * p.qk_nope, ld_v = static_cast<int64_t>(p.n_head) * p.v_head_dim;
  // The context's latent rows (c_kv, k_rope) as floats, then c_kv · W_UKᵀ and c_kv · W_UVᵀ: row t of k (v) holds
  // k_nope (v) of every head.
  thread_local std::vector<float> c_kv, k_rope, uk, uv, k, v;
  c_kv.resize(static_cast<size_t>(n_ctx * p.kv_lora));
  k_rope.resize(static_cast<size_t>(n_ctx * p.qk_rope));
  uk.resize(static_cast<size_t>(ld_k * p.kv_lora));
  uv.resize(static_cast<size_t>(ld_v * p.kv_lora));
  k.resize(static_cast<size_t>(n_ctx * ld_k));
  v.resize(static_cast<size_t>(n_ctx * ld_v));
  for (int64_t t0 = 0; t0 < n_ctx; t0 += p.block_size) {
    const int64_t slot0 = static_cast<int64_t>(sq.block_table[t0 / p.block_size]) * p.block_size;
    KvRows rows{&latent, slot0 * width, width, static_cast<int>(std::min<int64_t>(p.block_size, n_ctx - t0))};
    kv_read_rows(rows, p.kv_lora, c_kv.data() + t0 * p.kv_lora, p.kv_lora);
    rows.elem0 += p.kv_lora;
    kv_read_rows(rows, p.qk_rope, k_rope.data() + t0 * p.qk_rope, p.qk_rope);
  }
  // F32 weights and activations whatever the precision: int8 latents move V enough to flip the tiny DeepSeek's expert
  // choices downstream (MkmodelDeepseek.FastPrecisionPacksStackedExpertsAndStaysNearExact).
  unpack_w_uk_w_uv(ctx, p, w_uk, w_uv, uk.data(), uv.data());
  const TensorView latents = TensorView::make(c_kv.data(), DType::kF32, {n_ctx, p.kv_lora});
  CAI_TRY(dense_gemm(ctx, TensorView::make(uk.data(), DType::kF32, {ld_k, p.kv_lora}), latents, nullptr,
                     TensorView::make(k.data(), DType::kF32, {n_ctx, ld_k})));
  CAI_TRY(dense_gemm(ctx, TensorView::make(uv.data(), DType::kF32, {ld_v, p.kv_lora}), latents, nullptr,
                     TensorView::make(v.data(), DType::kF32, {n_ctx, ld_v})));

  // (The workers read the scratch through these: a lambda names this thread's thread_local, not the caller's.)
  const float* k_rows = k.data();
  const float* v_rows = v.data();
  const float* rope_rows = k_rope.data();
  // Work items: (head, tile of queries). A query's scores are its dots with the rows it sees, the rest of the tile's
  // rows weigh zero, so what it gets does not depend on its tile.
  const int64_t ld_q = static_cast<int64_t>(p.n_head) * qk, ld_out = static_cast<int64_t>(p.n_head) * p.v_head_dim;
  const int64_t n_tiles = (sq.n_q + kQueriesPerItem - 1) / kQueriesPerItem;
  parallel_rows(ctx, p.n_head * n_tiles, 1, [&](int64_t b, int64_t e) {
    const GemmKernels& kern = active_gemm_kernels();
    std::vector<float> scores, rope_scores;
    for (int64_t it = b; it < e; ++it) {
      const int h = static_cast<int>(it % p.n_head), j0 = static_cast<int>(it / p.n_head) * kQueriesPerItem;
      const int nj = std::min(kQueriesPerItem, sq.n_q - j0);
      const int rows = sq.pos0 + j0 + nj;  // what the tile's last query sees
      scores.resize(static_cast<size_t>(nj) * rows);
      rope_scores.resize(scores.size());
      const float* q0 = q.as<const float>() + ((sq.q_begin + j0) * ld_q) + static_cast<int64_t>(h) * qk;
      kern.rows_dot(q0, ld_q, nj, k_rows + static_cast<int64_t>(h) * p.qk_nope, ld_k, rows, p.qk_nope, scores.data(),
                    rows);
      kern.rows_dot(q0 + p.qk_nope, ld_q, nj, rope_rows, p.qk_rope, rows, p.qk_rope, rope_scores.data(), rows);
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
      kern.rows_axpy(scores.data(), rows, nj, v_rows + static_cast<int64_t>(h) * p.v_head_dim, ld_v, rows, p.v_head_dim,
                     o0, ld_out);
    }
  });
  return {};
}

}  // namespace cai::hal::cpu
