// CPU absorbed multi-head latent attention. The heads of a sequence share one latent cache row per position, so a
// work item is a (sequence, chunk of heads): its queries are absorbed (q_lat = W_UK^T q_nope, a dot with each row of
// w_uk) for a tile of query tokens, then each token's heads read every latent row once together (scores over
// [c_kv | k_rope], then Σ p c_kv), and W_UV maps the result back. Each head's W_UK and W_UV products are a dense GEMM
// over the tile's tokens with the head's rows as the weight (int8 dot products on the file's blocks under --precision
// fast).
#include <algorithm>
#include <mutex>
#include <vector>

#include "core/thread_pool.h"
#include "core/weight_row.h"
#include "hal/cpu/kernels/attention_mla_expanded.h"
#include "hal/cpu/kernels/gemm_kernels.h"
#include "hal/cpu/kernels/kernels.h"
#include "hal/cpu/kernels/mla_bf16.h"
#include "hal/cpu/kernels/qdot_groups.h"

namespace cai::hal::cpu {

const float* weight_rows_f32(const TensorView& w, int64_t r, int nt, float* buf) {
  if (w.dtype == DType::kF32 && !w.scale) return w.row<const float>(r);
  const DequantFn decode = active_gemm_kernels().dequant[static_cast<int>(w.dtype)];
  const int64_t n = w.cols();
  for (int t = 0; t < nt; ++t) {
    float* dst = buf + t * n;
    if (row_major_dtype(w.dtype) != DType::kCount) {
      dequantize_packed_row(w.dtype, static_cast<const uint8_t*>(w.data), r + t, n, dst);
    } else if (decode) {  // FP8's block scales after its vector decode
      decode(w.row<const uint8_t>(r + t), dst, n);
      apply_block_scales(w, r + t, dst);
    } else {
      dequantize_weight_row(w, r + t, dst);
    }
  }
  return buf;
}

namespace {

constexpr int kTokenTile = 32;  // query tokens absorbed together (their q_lat stay in L2)
constexpr int kRowChunk = 32;   // FP8 w_uk / w_uv rows decoded per kernel call (64 KiB at kv_lora 512)

struct MlaItem {
  const MlaParams& p;
  const AttnSeq& sq;
  const TensorView& q;
  const TensorView& w_uk;
  const TensorView& w_uv;
  const TensorView& latent;
  const TensorView& out;
  int h0, nh;                  // the chunk's heads
  const MlaBf16Kernels* bf16;  // BF16 products over the cache (--precision fast, where the CPU has them), else null
};

// Scratch of one worker: [token][head] rows of the tile, the decoded weight row and KV rows, the scores.
struct MlaScratch {
  std::vector<float> q_cat;  // q_lat (kv_lora) then q_rope (qk_rope) per (token, head)
  std::vector<float> o_lat;  // kv_lora per (token, head)
  std::vector<float> w_rows, kv_buf, scores;
  std::vector<float> x, y;                  // one head's GEMM input and output rows, contiguous
  std::vector<uint16_t> q_bf16, rows_bf16;  // the BF16 path's queries and cache rows
};

// y[j·ldy + o] = x[j·ldx + ·] · row r0 + o of w for nj inputs and n_out rows. A dense GEMM on the rows as a weight of
// their own, run on this thread; where the rows are not one (block-scaled FP8, whose scales cover 128-row blocks of
// the whole tensor, or packed row groups the range cuts through) they are decoded kRowChunk at a time instead.
Status head_gemm(const OpContext& ctx, const TensorView& w, int64_t r0, int n_out, const float* x, int64_t ldx, int nj,
                 float* y, int64_t ldy, MlaScratch& s) {
  const int64_t n_in = w.cols(), group = group_rows(w.dtype);
  if (w.scale || r0 % group != 0 || n_out % group != 0) {
    const GemmKernels& k = active_gemm_kernels();
    for (int o = 0; o < n_out; o += kRowChunk) {
      const int nt = std::min(kRowChunk, n_out - o);
      k.rows_dot(x, ldx, nj, weight_rows_f32(w, r0 + o, nt, s.w_rows.data()), n_in, nt, n_in, y + o, ldy);
    }
    return {};
  }
  s.x.resize(static_cast<size_t>(nj * n_in));
  s.y.resize(static_cast<size_t>(nj) * n_out);
  for (int j = 0; j < nj; ++j) std::copy_n(x + j * ldx, n_in, s.x.data() + j * n_in);
  TensorView rows = TensorView::make(const_cast<uint8_t*>(w.row<const uint8_t>(r0)), w.dtype, {n_out, n_in});
  rows.device = w.device;
  OpContext here = ctx;
  here.pool = nullptr;
  CAI_TRY(dense_gemm(here, rows, TensorView::make(s.x.data(), DType::kF32, {nj, n_in}), nullptr,
                     TensorView::make(s.y.data(), DType::kF32, {nj, n_out})));
  for (int j = 0; j < nj; ++j) std::copy_n(s.y.data() + static_cast<int64_t>(j) * n_out, n_out, y + j * ldy);
  return {};
}

// Tokens j0 .. j0 + nj − 1 of the item's sequence.
Status mla_tile(const OpContext& ctx, const MlaItem& m, int j0, int nj, MlaScratch& s) {
  const MlaParams& p = m.p;
  const int qk = p.qk_nope + p.qk_rope, width = p.kv_lora + p.qk_rope;
  const int64_t ld_cat = static_cast<int64_t>(m.nh) * width, ld_q = static_cast<int64_t>(p.n_head) * qk;
  const float* q0 = m.q.as<const float>() + ((m.sq.q_begin + j0) * p.n_head + m.h0) * qk;  // token j0, head h0
  for (int h = 0; h < m.nh; ++h) {  // q_lat[c] = q_nope · w_uk row (h, c), for every token
    CAI_TRY(head_gemm(ctx, m.w_uk, static_cast<int64_t>(m.h0 + h) * p.kv_lora, p.kv_lora, q0 + h * qk, ld_q, nj,
                      s.q_cat.data() + h * width, ld_cat, s));
    for (int j = 0; j < nj; ++j)
      std::copy_n(q0 + j * ld_q + h * qk + p.qk_nope, p.qk_rope, s.q_cat.data() + j * ld_cat + h * width + p.kv_lora);
  }
  std::fill_n(s.o_lat.begin(), static_cast<int64_t>(nj) * m.nh * p.kv_lora, 0.0f);
  for (int j = 0; j < nj; ++j) {
    const int n_ctx = m.sq.pos0 + j0 + j + 1;
    s.scores.resize(static_cast<size_t>(m.nh) * n_ctx);
    const auto block_rows = [&](int t0) {
      const int64_t slot0 = static_cast<int64_t>(m.sq.block_table[t0 / p.block_size]) * p.block_size;
      return KvRows{&m.latent, slot0 * width, width, std::min(p.block_size, n_ctx - t0)};
    };
    const float* qj = s.q_cat.data() + j * ld_cat;
    float* o_lat = s.o_lat.data() + static_cast<int64_t>(j) * m.nh * p.kv_lora;
    if (m.bf16)
      for (int h = 0; h < m.nh; ++h) m.bf16->to_bf16(qj + h * width, width, s.q_bf16.data() + h * width);
    int64_t ld;
    // The query row [q_lat | q_rope] against the cache row [c_kv | k_rope]: one dot over both parts.
    for (int t0 = 0; t0 < n_ctx; t0 += p.block_size) {
      const KvRows rows = block_rows(t0);
      if (!m.bf16) {
        kv_dot_block(rows, width, qj, width, m.nh, s.scores.data() + t0, n_ctx, s.kv_buf.data());
        continue;
      }
      const float* r = kv_f32_rows(rows, width, s.kv_buf.data(), &ld);
      m.bf16->dot_rows(s.q_bf16.data(), width, m.nh, r, ld, rows.nt, width, s.scores.data() + t0, n_ctx,
                       s.rows_bf16.data());
    }
    for (float& v : s.scores) v *= p.scale;
    for (int h = 0; h < m.nh; ++h) softmax_row(s.scores.data() + static_cast<size_t>(h) * n_ctx, n_ctx);
    for (int t0 = 0; t0 < n_ctx; t0 += p.block_size) {
      const KvRows rows = block_rows(t0);
      if (!m.bf16) {
        kv_axpy_block(rows, p.kv_lora, s.scores.data() + t0, n_ctx, m.nh, o_lat, p.kv_lora, s.kv_buf.data());
        continue;
      }
      const float* r = kv_f32_rows(rows, p.kv_lora, s.kv_buf.data(), &ld);
      m.bf16->axpy_rows(s.scores.data() + t0, n_ctx, m.nh, r, ld, rows.nt, p.kv_lora, o_lat, p.kv_lora,
                        s.rows_bf16.data());
    }
  }
  const int64_t ld_out = static_cast<int64_t>(p.n_head) * p.v_head_dim;
  float* out0 = m.out.as<float>() + (m.sq.q_begin + j0) * ld_out + static_cast<int64_t>(m.h0) * p.v_head_dim;
  for (int h = 0; h < m.nh; ++h)  // out[v] = W_UV row v · o_lat, for every token of the tile
    CAI_TRY(head_gemm(ctx, m.w_uv, static_cast<int64_t>(m.h0 + h) * p.v_head_dim, p.v_head_dim,
                      s.o_lat.data() + h * p.kv_lora, static_cast<int64_t>(m.nh) * p.kv_lora, nj,
                      out0 + h * p.v_head_dim, ld_out, s));
  return {};
}

}  // namespace

Status attention_mla(const OpContext& ctx, const MlaParams& p, const AttnBatch& batch, const TensorView& q,
                     const TensorView& w_uk, const TensorView& w_uv, const TensorView& latent, const TensorView& out) {
  CAI_TRY(check_kv_parts("attention_mla", latent.dtype, {p.kv_lora, p.qk_rope}));
  CAI_TRY(check_mla_weights(p, w_uk, w_uv));
  if (p.n_head <= 0 || p.block_size <= 0 || latent.cols() != p.kv_lora + p.qk_rope ||
      q.n_elements() % (static_cast<int64_t>(p.n_head) * (p.qk_nope + p.qk_rope)) ||
      out.n_elements() != q.n_elements() / (p.qk_nope + p.qk_rope) * p.v_head_dim)
    return invalid_argument("attention_mla: q {} latent {} out {} do not match the params", q.shape_string(),
                            latent.shape_string(), out.shape_string());
  // Prompts go expanded (attention_mla_expanded.cpp), one sequence at a time over all threads; the rest absorbed.
  std::vector<bool> expanded(static_cast<size_t>(batch.n_seqs()));
  for (int s = 0; s < batch.n_seqs(); ++s) {
    const AttnSeq sq = batch.host_seq(s);
    expanded[static_cast<size_t>(s)] = sq.n_q > 0 && mla_expansion_pays(p, sq.n_q, sq.pos0);
    if (expanded[static_cast<size_t>(s)]) CAI_TRY(attention_mla_expanded(ctx, p, sq, q, w_uk, w_uv, latent, out));
  }
  // As many head chunks per sequence as threads, so one sequence's decode step keeps every thread busy.
  const int threads = ctx.pool ? ctx.pool->size() : 1;
  const int n_chunks = std::min(p.n_head, std::max(1, threads));
  const int chunk = (p.n_head + n_chunks - 1) / n_chunks;
  const int width = p.kv_lora + p.qk_rope;
  // BF16 products under --precision fast where the CPU has them and the rows split into their 32-element steps.
  const MlaBf16Kernels* bf16 =
      ctx.precision == Precision::kFast && latent.dtype != DType::kQ8_0 && width % 32 == 0 && p.kv_lora % 16 == 0
          ? mla_bf16_kernels()
          : nullptr;
  std::mutex mu;
  Status failed;  // the first work item's error
  parallel_rows(ctx, batch.n_seqs() * n_chunks, 1, [&](int64_t b, int64_t e) {
    // Each thread keeps its scratch across calls (a decode step calls once per layer): buffers freed and allocated
    // again each call come back from the kernel as fresh zeroed pages, and a decode step pays their page faults
    // (`BM_attention_mla_decode`).
    thread_local MlaScratch s;
    s.w_rows.resize(static_cast<size_t>(kRowChunk) * std::max(p.kv_lora, p.qk_nope));
    s.kv_buf.resize(static_cast<size_t>(p.block_size) * width);
    if (bf16) {
      s.q_bf16.resize(static_cast<size_t>(chunk) * width);
      s.rows_bf16.resize(static_cast<size_t>(p.block_size + 1) * width);
    }
    for (int64_t it = b; it < e; ++it) {
      const int h0 = static_cast<int>(it % n_chunks) * chunk, nh = std::min(chunk, p.n_head - h0);
      const AttnSeq sq = batch.host_seq(static_cast<int>(it / n_chunks));
      if (sq.n_q == 0 || nh <= 0 || expanded[static_cast<size_t>(it / n_chunks)]) continue;
      const MlaItem m{p, sq, q, w_uk, w_uv, latent, out, h0, nh, bf16};
      const size_t tile = static_cast<size_t>(std::min(kTokenTile, sq.n_q));  // one row at decode
      s.q_cat.resize(std::max(s.q_cat.size(), tile * nh * width));
      s.o_lat.resize(std::max(s.o_lat.size(), tile * nh * p.kv_lora));
      for (int j0 = 0; j0 < sq.n_q; j0 += kTokenTile) {
        const Status st = mla_tile(ctx, m, j0, std::min(kTokenTile, sq.n_q - j0), s);
        if (st.ok()) continue;
        const std::lock_guard<std::mutex> lock(mu);
        if (failed.ok()) failed = st;
        return;
      }
    }
  });
  return failed;
}

}  // namespace cai::hal::cpu
