// CPU absorbed multi-head latent attention: per (sequence, head) W_UK/W_UV are decoded once and reused by its queries;
// latent rows (F32, F16, BF16 or Q8_0) are decoded as they are read.
#include <algorithm>
#include <vector>

#include "core/weight_row.h"
#include "hal/cpu/kernels/kernels.h"

namespace cai::hal::cpu {

namespace {

// One head of one sequence: q_lat = W_UK^T q_nope; scores over the latent cache; out = W_UV · Σ p c_kv.
void mla_head(const MlaParams& p, const AttnSeq& sq, int h, const TensorView& q, const std::vector<float>& w_h,
              const TensorView& latent, const TensorView& out, std::vector<float>& q_lat, std::vector<float>& scores,
              std::vector<float>& o_lat, std::vector<float>& lat_buf) {
  const int qk = p.qk_nope + p.qk_rope, width = p.kv_lora + p.qk_rope;
  for (int j = 0; j < sq.n_q; ++j) {
    const int64_t row = sq.q_begin + j;
    const float* qh = q.as<const float>() + (row * p.n_head + h) * qk;
    std::fill(q_lat.begin(), q_lat.end(), 0.0f);
    for (int i = 0; i < p.qk_nope; ++i) {
      const float* wk = &w_h[static_cast<size_t>(i) * p.kv_lora];
      for (int c = 0; c < p.kv_lora; ++c) q_lat[static_cast<size_t>(c)] += qh[i] * wk[c];
    }
    const int n_ctx = sq.pos0 + j + 1;
    scores.resize(static_cast<size_t>(n_ctx));
    for (int t = 0; t < n_ctx; ++t) {
      const int64_t slot = static_cast<int64_t>(sq.block_table[t / p.block_size]) * p.block_size + t % p.block_size;
      const float s = kv_dot(latent, slot * width, p.kv_lora, q_lat.data(), lat_buf.data()) +
                      kv_dot(latent, slot * width + p.kv_lora, p.qk_rope, qh + p.qk_nope, lat_buf.data());
      scores[static_cast<size_t>(t)] = s * p.scale;
    }
    softmax_row(scores.data(), n_ctx);
    std::fill(o_lat.begin(), o_lat.end(), 0.0f);
    for (int t = 0; t < n_ctx; ++t) {
      const int64_t slot = static_cast<int64_t>(sq.block_table[t / p.block_size]) * p.block_size + t % p.block_size;
      kv_axpy(latent, slot * width, p.kv_lora, scores[static_cast<size_t>(t)], o_lat.data(), lat_buf.data());
    }
    float* o = out.as<float>() + row * p.n_head * p.v_head_dim + h * p.v_head_dim;
    for (int v = 0; v < p.v_head_dim; ++v) {
      const float* wv = &w_h[static_cast<size_t>(p.qk_nope + v) * p.kv_lora];
      float s = 0;
      for (int c = 0; c < p.kv_lora; ++c) s += wv[c] * o_lat[static_cast<size_t>(c)];
      o[v] = s;
    }
  }
}

}  // namespace

Status attention_mla(const OpContext& ctx, const MlaParams& p, const AttnBatch& batch, const TensorView& q,
                     const TensorView& kv_b, const TensorView& latent, const TensorView& out) {
  CAI_TRY(check_kv_parts("attention_mla", latent.dtype, {p.kv_lora, p.qk_rope}));
  const int per_head = p.qk_nope + p.v_head_dim;
  if (p.n_head <= 0 || p.block_size <= 0 || kv_b.rows() != static_cast<int64_t>(p.n_head) * per_head ||
      kv_b.cols() != p.kv_lora || latent.cols() != p.kv_lora + p.qk_rope ||
      q.n_elements() % (static_cast<int64_t>(p.n_head) * (p.qk_nope + p.qk_rope)) ||
      out.n_elements() != q.n_elements() / (p.qk_nope + p.qk_rope) * p.v_head_dim)
    return invalid_argument("attention_mla: q {} kv_b {} latent {} out {} do not match the params", q.shape_string(),
                            kv_b.shape_string(), latent.shape_string(), out.shape_string());
  parallel_rows(ctx, batch.n_seqs() * p.n_head, 1, [&](int64_t b, int64_t e) {
    std::vector<float> w_h(static_cast<size_t>(per_head) * p.kv_lora), q_lat(static_cast<size_t>(p.kv_lora)),
        o_lat(static_cast<size_t>(p.kv_lora)), lat_buf(static_cast<size_t>(p.kv_lora + p.qk_rope)), scores;
    for (int64_t it = b; it < e; ++it) {
      const int s = static_cast<int>(it / p.n_head), h = static_cast<int>(it % p.n_head);
      const AttnSeq sq = batch.host_seq(s);
      if (sq.n_q == 0) continue;
      for (int r = 0; r < per_head; ++r)
        dequantize_weight_row(kv_b, static_cast<int64_t>(h) * per_head + r, &w_h[static_cast<size_t>(r) * p.kv_lora]);
      mla_head(p, sq, h, q, w_h, latent, out, q_lat, scores, o_lat, lat_buf);
    }
  });
  return {};
}

}  // namespace cai::hal::cpu
