// OpTable: one typed function pointer per op. A backend fills what it supports; null = unsupported.
// Op parameter structs live here too: they describe maths, never models.
#pragma once

#include <cstdint>

#include "core/status.h"
#include "core/tensor_view.h"

namespace cai {
class ThreadPool;
}

namespace cai::hal {

class Stream;

// What a kernel may use to run: the backend's executor (CPU: a thread pool) and the stream to queue on.
struct OpContext {
  ThreadPool* pool = nullptr;
  Stream* stream = nullptr;
  // Every row of a result must be bit-identical whatever else is in the batch (serving: a request's tokens must not
  // depend on its batch-mates). Kernels then use one accumulation order for all batch sizes.
  bool batch_invariant = false;
};

enum class RopeStyle : uint8_t {
  kNorm,  // pairs (x[2i], x[2i+1]) — GGUF llama, DeepSeek
  kNeox,  // pairs (x[i], x[i + n_rot/2]) — HF rotate_half, Qwen2
};

struct RopeParams {
  RopeStyle style = RopeStyle::kNorm;
  int n_rot = 0;            // rotated dims per head; the others pass through
  int rot_offset = 0;       // first rotated dim of each head (DeepSeek rotates the last qk_rope dims)
  float freq_base = 10000.0f;
  // Per-pair frequency divisor (Llama-3 scaling, GGUF rope_freqs), n_rot/2 floats, or null.
  const float* freq_divisors = nullptr;
  // YaRN (type yarn when yarn_factor > 1): see FORMATS.md §4.2.
  float yarn_factor = 1.0f;
  int yarn_orig_ctx = 0;
  float yarn_beta_fast = 32.0f;
  float yarn_beta_slow = 1.0f;
  float mscale = 1.0f;      // multiplies cos and sin
};

// One sequence inside a batched attention call. Its queries are rows [q_begin, q_begin + n_q) of q; query j sits at
// position pos0 + j and attends to cache positions 0 .. pos0 + j (causal). Cache position p lives in slot
// block_table[p / block_size] * block_size + p % block_size of the paged cache.
struct AttnSeq {
  int32_t q_begin = 0;
  int32_t n_q = 0;
  int32_t pos0 = 0;
  const int32_t* block_table = nullptr;
};

struct AttentionParams {
  int n_head = 0;
  int n_kv_head = 0;
  int head_dim = 0;    // q/k width per head
  int head_dim_v = 0;  // v width per head
  float scale = 0.0f;  // softmax scale (usually head_dim^-0.5)
  int block_size = 0;  // cache positions per block
};

// Router of a mixture of experts (DeepSeek V2/V3 gate). FORMATS.md and DeepSeek model.py `Gate`.
struct MoeGateParams {
  int n_experts = 0;
  int top_k = 0;
  int n_group = 1;     // experts split into n_group consecutive groups ...
  int topk_group = 1;  // ... of which only the best topk_group are eligible
  bool sigmoid = false;         // scores = sigmoid(logits) (V3/R1) or softmax(logits) (V2)
  bool norm_topk_prob = false;  // renormalise the selected weights to sum 1
  float routed_scaling = 1.0f;  // then multiply them by this
};

// Per-expert weights of one MoE layer: arrays of n_experts views each ([ffn, hidden], [ffn, hidden], [hidden, ffn]).
struct ExpertWeights {
  const TensorView* gate = nullptr;
  const TensorView* up = nullptr;
  const TensorView* down = nullptr;
  int n_experts = 0;
};

// Multi-head latent attention over a cache of [c_kv (kv_lora) | k_rope (qk_rope)] per token.
struct MlaParams {
  int n_head = 0;
  int qk_nope = 0;
  int qk_rope = 0;
  int v_head_dim = 0;
  int kv_lora = 0;
  float scale = 0.0f;
  int block_size = 0;
};

struct OpTable {
  // out[i, :] = table[ids[i], :] as F32.  table [n_vocab, dim] any dtype; out [n, dim] F32.
  Status (*embed)(const OpContext&, const TensorView& table, const int32_t* ids, int64_t n,
                  const TensorView& out) = nullptr;
  // out = x / sqrt(mean(x^2) + eps) * w, per row. x, out [n, dim] F32; w [dim] F32.
  Status (*rms_norm)(const OpContext&, const TensorView& x, const TensorView& w, float eps,
                     const TensorView& out) = nullptr;
  // In place on x [n_tok, n_head, head_dim] F32; token i at position pos[i].
  Status (*rope)(const OpContext&, const TensorView& x, const int32_t* pos, const RopeParams& p) = nullptr;
  // y[n, out] = x[n, in] · w[out, in]^T (+ bias[out]). w any dtype; x, y, bias F32. bias may be null.
  Status (*dense_gemm)(const OpContext&, const TensorView& w, const TensorView& x, const TensorView* bias,
                       const TensorView& y) = nullptr;
  // out = a + b, elementwise F32, same shape.
  Status (*add)(const OpContext&, const TensorView& a, const TensorView& b, const TensorView& out) = nullptr;
  // out = silu(gate) * up, elementwise F32.
  Status (*swiglu)(const OpContext&, const TensorView& gate, const TensorView& up, const TensorView& out) = nullptr;
  // Softmax over the last dim, in place, F32.
  Status (*softmax)(const OpContext&, const TensorView& x) = nullptr;
  // dst[r, dst_col + j] = src[r, src_col + j] for j < n_cols, every row r. F32.
  Status (*copy_cols)(const OpContext&, const TensorView& src, int64_t src_col, const TensorView& dst, int64_t dst_col,
                      int64_t n_cols) = nullptr;
  // Write src [n_tok, width] (F32) rows into cache [n_slots, width] at slots[i].
  Status (*kv_write)(const OpContext&, const TensorView& src, const int32_t* slots, const TensorView& cache) = nullptr;
  // Grouped-query attention over a paged cache. q [n_tok, n_head, head_dim]; k_cache [n_slots, n_kv_head, head_dim];
  // v_cache [n_slots, n_kv_head, head_dim_v]; out [n_tok, n_head, head_dim_v]. All F32.
  Status (*attention_gqa)(const OpContext&, const AttentionParams& p, const AttnSeq* seqs, int n_seqs,
                          const TensorView& q, const TensorView& k_cache, const TensorView& v_cache,
                          const TensorView& out) = nullptr;
  // Expert selection: logits [n, E] F32 (router output), bias [E] F32 or null (used for selection only) →
  // ids [n, top_k] I32 (by descending biased score; ties → lower id) and weights [n, top_k] F32.
  Status (*moe_gate)(const OpContext&, const MoeGateParams& p, const TensorView& logits, const TensorView* bias,
                     const TensorView& ids, const TensorView& weights) = nullptr;
  // out[t] = Σ_k weights[t,k] · down_e(silu(gate_e(x[t])) · up_e(x[t])), e = ids[t,k]; each selected expert runs once
  // over all its tokens. x, out [n, hidden] F32.
  Status (*sparse_moe)(const OpContext&, const ExpertWeights& w, const TensorView& x, const TensorView& ids,
                       const TensorView& weights, const TensorView& out) = nullptr;
  // Absorbed MLA: q [n_tok, n_head, qk_nope + qk_rope] (rope part already rotated); kv_b [n_head·(qk_nope+v), kv_lora]
  // any dtype (per head: W_UK rows then W_UV rows); latent [n_slots, kv_lora + qk_rope] F32; out [n_tok, n_head·v].
  // score(t) = (W_UK_h^T q_nope)·c_kv[t] + q_rope·k_rope[t]; out_h = W_UV_h (Σ_t p_t c_kv[t]).
  Status (*attention_mla)(const OpContext&, const MlaParams& p, const AttnSeq* seqs, int n_seqs, const TensorView& q,
                          const TensorView& kv_b, const TensorView& latent, const TensorView& out) = nullptr;
};

}  // namespace cai::hal
