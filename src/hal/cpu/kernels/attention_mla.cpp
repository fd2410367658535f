// CPU absorbed multi-head latent attention. The heads of a sequence share one latent cache row per position, so a
// work item is a (sequence, chunk of heads): its queries are absorbed (q_lat = W_UK^T q_nope) for a tile of query
// tokens, then each token's heads read every latent row once together (scores, then Σ p c_kv), and W_UV maps the
// result back. W_UK / W_UV rows are read in place (F32) or decoded kRowChunk at a time, once per tile, never as a
// whole head; each chunk is one row-block kernel call, so the tile's outputs stay in registers across its rows.
#include <algorithm>
#include <vector>

#include "core/thread_pool.h"
#include "core/weight_row.h"
#include "hal/cpu/kernels/attention_mla_expanded.h"
#include "hal/cpu/kernels/gemm_kernels.h"
#include "hal/cpu/kernels/kernels.h"

namespace cai::hal::cpu {

namespace {

constexpr int kTokenTile = 32;  // query tokens absorbed together (their q_lat stay in L2)
constexpr int kRowChunk = 32;   // W_UK / W_UV rows per kernel call (decoded: 64 KiB at kv_lora 512)

struct MlaItem {
  const MlaParams& p;
  const AttnSeq& sq;
  const TensorView& q;
  const TensorView& kv_b;
  const TensorView& latent;
  const TensorView& out;
  int h0, nh;  // the chunk's heads
};

// Scratch of one worker: [token][head] rows of the tile, the decoded weight row and KV rows, the scores.
struct MlaScratch {
  std::vector<float> q_cat;  // q_lat (kv_lora) then q_rope (qk_rope) per (token, head)
  std::vector<float> o_lat;  // kv_lora per (token, head)
  std::vector<float> w_rows, kv_buf, scores, rope_scores;
};

// Tokens j0 .. j0 + nj − 1 of the item's sequence.
void mla_tile(const MlaItem& m, int j0, int nj, MlaScratch& s) {
  const MlaParams& p = m.p;
  const GemmKernels& k = active_gemm_kernels();
  const int qk = p.qk_nope + p.qk_rope, width = p.kv_lora + p.qk_rope, per_head = p.qk_nope + p.v_head_dim;
  const int64_t ld_cat = static_cast<int64_t>(m.nh) * width, ld_q = static_cast<int64_t>(p.n_head) * qk;
  const float* q0 = m.q.as<const float>() + ((m.sq.q_begin + j0) * p.n_head + m.h0) * qk;  // token j0, head h0
  // Rows r .. r + nt − 1 of kv_b as floats, kv_lora apart: in place for F32, else through this ISA's decoder where it
  // has one (the generic decode costs more than the products that use the rows).
  const DequantFn decode = m.kv_b.scale ? nullptr : k.dequant[static_cast<int>(m.kv_b.dtype)];
  const auto weight_rows = [&](int64_t r, int nt) -> const float* {
    if (m.kv_b.dtype == DType::kF32 && !m.kv_b.scale) return m.kv_b.row<const float>(r);
    for (int t = 0; t < nt; ++t) {
      float* dst = s.w_rows.data() + static_cast<int64_t>(t) * p.kv_lora;
      if (decode)
        decode(m.kv_b.row<const uint8_t>(r + t), dst, p.kv_lora);
      else
        dequantize_weight_row(m.kv_b, r + t, dst);
    }
    return s.w_rows.data();
  };
  std::fill(s.q_cat.begin(), s.q_cat.end(), 0.0f);
  for (int h = 0; h < m.nh; ++h) {
    const int64_t uk0 = static_cast<int64_t>(m.h0 + h) * per_head;
    for (int i = 0; i < p.qk_nope; i += kRowChunk) {  // q_lat += Σ_i q_nope[i] · W_UK row i, for every token
      const int nt = std::min(kRowChunk, p.qk_nope - i);
      k.rows_axpy(q0 + h * qk + i, ld_q, nj, weight_rows(uk0 + i, nt), p.kv_lora, nt, p.kv_lora,
                  s.q_cat.data() + h * width, ld_cat);
    }
    for (int j = 0; j < nj; ++j)
      std::copy_n(q0 + j * ld_q + h * qk + p.qk_nope, p.qk_rope, s.q_cat.data() + j * ld_cat + h * width + p.kv_lora);
  }
  std::fill(s.o_lat.begin(), s.o_lat.end(), 0.0f);
  for (int j = 0; j < nj; ++j) {
    const int n_ctx = m.sq.pos0 + j0 + j + 1;
    s.scores.resize(static_cast<size_t>(m.nh) * n_ctx);
    s.rope_scores.resize(s.scores.size());
    const auto block_rows = [&](int t0) {
      const int64_t slot0 = static_cast<int64_t>(m.sq.block_table[t0 / p.block_size]) * p.block_size;
      return KvRows{&m.latent, slot0 * width, width, std::min(p.block_size, n_ctx - t0)};
    };
    const float* qj = s.q_cat.data() + j * ld_cat;
    for (int t0 = 0; t0 < n_ctx; t0 += p.block_size) {
      KvRows rows = block_rows(t0);
      kv_dot_block(rows, p.kv_lora, qj, width, m.nh, s.scores.data() + t0, n_ctx, s.kv_buf.data());
      rows.elem0 += p.kv_lora;
      kv_dot_block(rows, p.qk_rope, qj + p.kv_lora, width, m.nh, s.rope_scores.data() + t0, n_ctx, s.kv_buf.data());
    }
    for (size_t i = 0; i < s.scores.size(); ++i) s.scores[i] = (s.scores[i] + s.rope_scores[i]) * p.scale;
    for (int h = 0; h < m.nh; ++h) softmax_row(s.scores.data() + static_cast<size_t>(h) * n_ctx, n_ctx);
    for (int t0 = 0; t0 < n_ctx; t0 += p.block_size)
      kv_axpy_block(block_rows(t0), p.kv_lora, s.scores.data() + t0, n_ctx, m.nh,
                    s.o_lat.data() + static_cast<int64_t>(j) * m.nh * p.kv_lora, p.kv_lora, s.kv_buf.data());
  }
  const int64_t ld_out = static_cast<int64_t>(p.n_head) * p.v_head_dim;
  float* out0 = m.out.as<float>() + (m.sq.q_begin + j0) * ld_out + static_cast<int64_t>(m.h0) * p.v_head_dim;
  for (int h = 0; h < m.nh; ++h)
    for (int v = 0; v < p.v_head_dim; v += kRowChunk) {  // out[v] = W_UV row v · o_lat, for every token of the tile
      const int nt = std::min(kRowChunk, p.v_head_dim - v);
      const float* w_uv = weight_rows(static_cast<int64_t>(m.h0 + h) * per_head + p.qk_nope + v, nt);
      k.rows_dot(s.o_lat.data() + h * p.kv_lora, static_cast<int64_t>(m.nh) * p.kv_lora, nj, w_uv, p.kv_lora, nt,
                 p.kv_lora, out0 + h * p.v_head_dim + v, ld_out);
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
  // Prompts go expanded (attention_mla_expanded.cpp), one sequence at a time over all threads; the rest absorbed.
  std::vector<bool> expanded(static_cast<size_t>(batch.n_seqs()));
  for (int s = 0; s < batch.n_seqs(); ++s) {
    const AttnSeq sq = batch.host_seq(s);
    expanded[static_cast<size_t>(s)] = sq.n_q > 0 && mla_expansion_pays(p, sq.n_q, sq.pos0);
    if (expanded[static_cast<size_t>(s)]) CAI_TRY(attention_mla_expanded(ctx, p, sq, q, kv_b, latent, out));
  }
  // As many head chunks per sequence as threads, so one sequence's decode step keeps every thread busy.
  const int threads = ctx.pool ? ctx.pool->size() : 1;
  const int n_chunks = std::min(p.n_head, std::max(1, threads));
  const int chunk = (p.n_head + n_chunks - 1) / n_chunks;
  const int width = p.kv_lora + p.qk_rope;
  parallel_rows(ctx, batch.n_seqs() * n_chunks, 1, [&](int64_t b, int64_t e) {
    MlaScratch s;
    s.w_rows.resize(static_cast<size_t>(kRowChunk) * p.kv_lora);
    s.kv_buf.resize(static_cast<size_t>(p.block_size) * width);
    for (int64_t it = b; it < e; ++it) {
      const int h0 = static_cast<int>(it % n_chunks) * chunk, nh = std::min(chunk, p.n_head - h0);
      const AttnSeq sq = batch.host_seq(static_cast<int>(it / n_chunks));
      if (sq.n_q == 0 || nh <= 0 || expanded[static_cast<size_t>(it / n_chunks)]) continue;
      const MlaItem m{p, sq, q, kv_b, latent, out, h0, nh};
      s.q_cat.resize(static_cast<size_t>(kTokenTile) * nh * width);
      s.o_lat.resize(static_cast<size_t>(kTokenTile) * nh * p.kv_lora);
      for (int j0 = 0; j0 < sq.n_q; j0 += kTokenTile) mla_tile(m, j0, std::min(kTokenTile, sq.n_q - j0), s);
    }
  });
  return {};
}

}  // namespace cai::hal::cpu
