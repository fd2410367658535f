// OpTable: the list of ops (CAI_HAL_OPS) and one typed function pointer per op. A backend fills what it supports.
// Op parameter structs live here too: they describe maths, never models.
#pragma once

#include <cstdint>
#include <type_traits>
#include <vector>

#include "core/status.h"
#include "cai/backend_abi.h"
#include "core/tensor_view.h"

namespace cai {
class ThreadPool;
}

namespace cai::hal {

class Stream;

// How exactly a kernel must compute. kExact: weights are dequantized exactly and multiplied by F32 activations (what
// the reference-logit oracles check). kFast: a backend may quantize activations too (the CPU: per-32 int8 blocks and
// int8 dot products) where it has such a kernel for the weight dtype; results stay batch-invariant.
enum class Precision : uint8_t { kExact, kFast };

// How finely a fast path must keep the activations a dense_gemm weight multiplies, chosen per weight by the model when
// it loads the weight (Device::pack_gemm_weight). kWeight: at least as finely as the weight's own codes (the CPU:
// 16-bit activations for Q8_0, 8-bit for 4- to 6-bit codes). k8Bit: 8 bits whatever the weight's type, for the
// projections measured to bear it (the MLP's gate and up: kGateUpGrain in model/layers/mlp.h; the output head beside
// 4- to 6-bit layers: head_grain in model/decoder.cpp).
enum class ActivationGrain : uint8_t { kWeight, k8Bit };

// What a kernel may use to run: the backend's executor (CPU: a thread pool) and the stream to queue on.
struct OpContext {
  ThreadPool* pool = nullptr;
  Stream* stream = nullptr;
  // Every row of a result must be bit-identical whatever else is in the batch (serving: a request's tokens must not
  // depend on its batch-mates). Kernels then use one accumulation order for all batch sizes.
  bool batch_invariant = false;
  void* backend = nullptr;  // a plugin device's own handle (host-side plugin wrapper), else null
  Precision precision = Precision::kExact;
};

// The element types a KV cache may hold (kv_write, attention_gqa, attention_mla): F32, F16 and BF16 on every backend;
// Q8_0 (GGUF 32-element blocks, each head / latent part whole blocks) only where Device::supports_kv_dtype says so.
inline bool is_kv_cache_dtype(DType t) {
  return t == DType::kF32 || t == DType::kF16 || t == DType::kBF16 || t == DType::kQ8_0;
}
inline Status check_kv_cache_dtype(const char* what, DType t) {
  if (is_kv_cache_dtype(t)) return {};
  return unsupported("{}: a KV cache of {} is not supported (f32, f16, bf16 or q8_0)", what, dtype_name(t));
}

// Op parameter structs are the plugin ABI's (include/cai/backend_abi.h): one definition for both sides.
struct RopeStyle {
  static constexpr int32_t kNorm = CAI_ROPE_NORM;  // pairs (x[2i], x[2i+1]) — GGUF llama, DeepSeek
  static constexpr int32_t kNeox = CAI_ROPE_NEOX;  // pairs (x[i], x[i + n_rot/2]) — HF rotate_half, Qwen2
};
using RopeParams = ::CaiRopeParams;
using AttentionParams = ::CaiAttentionParams;
using MoeGateParams = ::CaiMoeGateParams;
using MlaParams = ::CaiMlaParams;

// attention_mla's W_UK / W_UV shapes: w_uk [n_head·kv_lora, qk_nope], w_uv [n_head·v_head_dim, kv_lora].
inline Status check_mla_weights(const MlaParams& p, const TensorView& w_uk, const TensorView& w_uv) {
  if (w_uk.n_dims == 2 && w_uv.n_dims == 2 && w_uk.rows() == int64_t{p.n_head} * p.kv_lora &&
      w_uk.cols() == p.qk_nope && w_uv.rows() == int64_t{p.n_head} * p.v_head_dim && w_uv.cols() == p.kv_lora)
    return {};
  return invalid_argument("attention_mla: w_uk {} and w_uv {} must be [{} · {}, {}] and [{} · {}, {}]",
                          w_uk.shape_string(), w_uv.shape_string(), p.n_head, p.kv_lora, p.qk_nope, p.n_head,
                          p.v_head_dim, p.kv_lora);
}

// Host view of one sequence of an AttnBatch whose tensors the host can read (CPU kernels, references).
struct AttnSeq {
  int32_t q_begin = 0;
  int32_t n_q = 0;
  int32_t pos0 = 0;
  const int32_t* block_table = nullptr;
};

// The sequences of one batched attention call, in device memory (see CaiAttnBatch): sequence s owns query rows
// [q_begin, q_begin + n_q); query j sits at position pos0 + j and attends to cache positions 0 .. pos0 + j, found in
// slot block_tables[s, p / block_size] * block_size + p % block_size of the paged cache.
struct AttnBatch {
  TensorView seqs;          // I32 [n_seqs, 3]: q_begin, n_q, pos0
  TensorView block_tables;  // I32 [n_seqs, max_blocks]
  int32_t max_q = 0;        // host launch bounds: largest n_q ...
  int32_t max_ctx = 0;      // ... and largest pos0 + n_q
  int64_t n_seqs() const { return seqs.n_dims == 0 ? 0 : seqs.dim(0); }
  AttnSeq host_seq(int64_t s) const {
    const int32_t* r = seqs.as<const int32_t>() + s * 3;
    return {r[0], r[1], r[2], block_tables.row<const int32_t>(s)};
  }
  std::vector<AttnSeq> host_seqs() const {
    std::vector<AttnSeq> out;
    for (int64_t s = 0; s < n_seqs(); ++s) out.push_back(host_seq(s));
    return out;
  }
};

// Stacked expert weights of one MoE layer, as GGUF stores them: gate/up [E, ffn, hidden], down [E, hidden, ffn].
// Under expert parallelism a rank's stack holds the layer's experts [expert_begin, expert_begin + E): sparse_moe
// computes the choices of those ids only, and the others add nothing (another rank adds them).
struct ExpertWeights {
  TensorView gate, up, down;
  int32_t expert_begin = 0;
  int64_t n_experts() const { return gate.dim(0); }
};

// Every op of the HAL, written once: X(member, Id, (OpContext, parameters...)). It expands into OpId::kId,
// op_name(), OpTable's member of that signature, Device::supports(), the plugin thunks (for the ops the plugin ABI's
// CaiOps carries), the no-op table of a remote device, and the declarations and table fills of the CPU and reference
// kernels. Adding an op is one line here plus its kernels (a CPU and a reference one; a device plugin's once CaiOps
// has a slot for it). Every TensorView an op receives lives on the op's device (ids, positions, slots and tables too).
#define CAI_HAL_OPS(X)                                                                                                 \
  /* out[i, :] = table[ids[i], :] as F32.  table [n_vocab, dim] any dtype; ids [n] I32; out [n, dim] F32. */           \
  X(embed, Embed, (const OpContext&, const TensorView& table, const TensorView& ids, const TensorView& out))           \
  /* out = x / sqrt(mean(x^2) + eps) * w, per row. x, out [n, dim] F32; w [dim] F32. */                                \
  X(rms_norm, RmsNorm, (const OpContext&, const TensorView& x, const TensorView& w, float eps, const TensorView& out)) \
  /* In place on x [n_tok, n_head, head_dim] F32; token i at position pos[i] (I32 [n_tok]); pair i turns by            \
     pos · inv_freq[i] (F32 [n_rot/2], from rope_inv_freqs). */                                                       \
  X(rope, Rope,                                                                                                        \
    (const OpContext&, const TensorView& x, const TensorView& pos, const TensorView& inv_freq, const RopeParams& p))   \
  /* y[n, out] = x[n, in] · w[out, in]^T (+ bias[out]). w any dtype; x, y, bias F32. bias may be null. */             \
  X(dense_gemm, DenseGemm,                                                                                             \
    (const OpContext&, const TensorView& w, const TensorView& x, const TensorView* bias, const TensorView& y))         \
  /* out = a + b, elementwise F32, same shape. */                                                                      \
  X(add, Add, (const OpContext&, const TensorView& a, const TensorView& b, const TensorView& out))                     \
  /* out = silu(gate) * up, elementwise F32. */                                                                        \
  X(swiglu, Swiglu, (const OpContext&, const TensorView& gate, const TensorView& up, const TensorView& out))           \
  /* Softmax over the last dim, in place, F32. */                                                                      \
  X(softmax, Softmax, (const OpContext&, const TensorView& x))                                                         \
  /* dst[r, dst_col + j] = src[r, src_col + j] for j < n_cols, every row r. F32. */                                    \
  X(copy_cols, CopyCols,                                                                                               \
    (const OpContext&, const TensorView& src, int64_t src_col, const TensorView& dst, int64_t dst_col,                 \
     int64_t n_cols))                                                                                                  \
  /* Write src [n_tok, width] (F32) rows into cache [n_slots, width] at slots[i] (I32 [n_tok]). The cache is F32,      \
     F16, BF16 or Q8_0 (is_kv_cache_dtype); rows are encoded bit-exact with quantize_row (F16/BF16 round to nearest    \
     even). */                                                                                                         \
  X(kv_write, KvWrite, (const OpContext&, const TensorView& src, const TensorView& slots, const TensorView& cache))    \
  /* Grouped-query attention over a paged cache. q [n_tok, n_head, head_dim]; k_cache [n_slots, n_kv_head,             \
     head_dim]; v_cache [n_slots, n_kv_head, head_dim_v]; out [n_tok, n_head, head_dim_v]. q / out F32; k_cache /      \
     v_cache F32, F16, BF16 or Q8_0 (one dtype, decoded to float as read); accumulation in F32. */                     \
  X(attention_gqa, AttentionGqa,                                                                                       \
    (const OpContext&, const AttentionParams& p, const AttnBatch& batch, const TensorView& q,                          \
     const TensorView& k_cache, const TensorView& v_cache, const TensorView& out))                                     \
  /* Expert selection: logits [n, E] F32 (router output), bias [E] F32 or null (used for selection only) → ids       \
     [n, top_k] I32 (by descending biased score; ties → lower id) and weights [n, top_k] F32. */                     \
  X(moe_gate, MoeGate,                                                                                                 \
    (const OpContext&, const MoeGateParams& p, const TensorView& logits, const TensorView* bias,                       \
     const TensorView& ids, const TensorView& weights))                                                                \
  /* out[t] = Σ_k weights[t,k] · down_e(silu(gate_e(x[t])) · up_e(x[t])), e = ids[t,k]; each selected expert runs   \
     once over all its tokens. x, out [n, hidden] F32; ids [n, top_k] I32; weights [n, top_k] F32. */                  \
  X(sparse_moe, SparseMoe,                                                                                             \
    (const OpContext&, const ExpertWeights& w, const TensorView& x, const TensorView& ids, const TensorView& weights,  \
     const TensorView& out))                                                                                           \
  /* Absorbed MLA: q [n_tok, n_head, qk_nope + qk_rope] (rope part already rotated); w_uk [n_head·kv_lora, qk_nope]   \
     (row (h, c) is column c of head h's W_UK: GGUF's attn_k_b as stored) and w_uv [n_head·v, kv_lora] (head h's W_UV \
     rows: attn_v_b), each any dtype; latent [n_slots, kv_lora + qk_rope] F32, F16, BF16 or Q8_0 (decoded to float as  \
     read); out [n_tok, n_head·v] F32. score(t) = (W_UK_h^T q_nope)·c_kv[t] + q_rope·k_rope[t];                     \
     out_h = W_UV_h (Σ_t p_t c_kv[t]). */                                                                             \
  X(attention_mla, AttentionMla,                                                                                       \
    (const OpContext&, const MlaParams& p, const AttnBatch& batch, const TensorView& q, const TensorView& w_uk,        \
     const TensorView& w_uv, const TensorView& latent, const TensorView& out))

#define CAI_OP_ENUMERATOR(op, Id, params) k##Id,
enum class OpId : uint8_t { CAI_HAL_OPS(CAI_OP_ENUMERATOR) kCount };
#undef CAI_OP_ENUMERATOR
const char* op_name(OpId op);

// One function pointer per op; a backend fills what it supports, null = unsupported.
struct OpTable {
#define CAI_OP_MEMBER(op, Id, params) Status(*op) params = nullptr;
  CAI_HAL_OPS(CAI_OP_MEMBER)
#undef CAI_OP_MEMBER
};

// An OpTable of the functions named after the ops where this is expanded (a backend's kernels, every op present).
#define CAI_OP_FILL(op, Id, params) t.op = op;
#define CAI_OP_TABLE_OF_KERNELS()      \
  [] {                                 \
    ::cai::hal::OpTable t;             \
    CAI_HAL_OPS(CAI_OP_FILL) return t; \
  }()

// The OpId of an OpTable member: op_id<&OpTable::embed>() == OpId::kEmbed.
template <auto Member>
constexpr OpId op_id() {
#define CAI_OP_ID_OF(op, Id, params)                                      \
  if constexpr (std::is_same_v<decltype(Member), decltype(&OpTable::op)>) \
    if (Member == &OpTable::op) return OpId::k##Id;
  CAI_HAL_OPS(CAI_OP_ID_OF)
#undef CAI_OP_ID_OF
  return OpId::kCount;
}

}  // namespace cai::hal
