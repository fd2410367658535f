// AttentionGqa: the Llama/Qwen2 attention block over the paged KV cache.
#include "model/layers/attention_gqa.h"

#include <cmath>

#include "core/profile.h"
#include "ops/ops.h"

namespace cai {

Result<AttentionGqa> AttentionGqa::load(WeightStore& w, const ModelConfig& cfg, int layer) {
  AttentionGqa a;
  a.layer_ = layer;
  const int64_t hidden = cfg.hidden_size, hd = cfg.head_dim;
  const int64_t q_width = cfg.num_attention_heads * hd, kv_width = cfg.num_key_value_heads * hd;
  const std::string p = "blk." + std::to_string(layer) + ".";
  CAI_ASSIGN_OR_RETURN(a.wq_, w.get_gemm_weight(p + "attn_q.weight", {q_width, hidden}));
  CAI_ASSIGN_OR_RETURN(a.wk_, w.get_gemm_weight(p + "attn_k.weight", {kv_width, hidden}));
  CAI_ASSIGN_OR_RETURN(a.wv_, w.get_gemm_weight(p + "attn_v.weight", {kv_width, hidden}));
  CAI_ASSIGN_OR_RETURN(a.wo_, w.get_gemm_weight(p + "attn_output.weight", {hidden, q_width}));
  if (cfg.attention_bias) {
    CAI_ASSIGN_OR_RETURN(a.bq_, w.get_f32(p + "attn_q.bias", {q_width}));
    CAI_ASSIGN_OR_RETURN(a.bk_, w.get_f32(p + "attn_k.bias", {kv_width}));
    CAI_ASSIGN_OR_RETURN(a.bv_, w.get_f32(p + "attn_v.bias", {kv_width}));
  }
  a.attn_.n_head = cfg.num_attention_heads;
  a.attn_.n_kv_head = cfg.num_key_value_heads;
  a.attn_.head_dim = cfg.head_dim;
  a.attn_.head_dim_v = cfg.head_dim;
  a.attn_.scale = 1.0f / std::sqrt(static_cast<float>(cfg.head_dim));
  a.rope_ = cfg.rope_params();
  CAI_ASSIGN_OR_RETURN(a.rope_inv_freq_, w.upload_f32("rope.inv_freq", rope_inv_freqs(cfg.rope_freq_config()),
                                                      w.placement().layer_device(layer)));
  return a;
}

Status AttentionGqa::forward(hal::Device& d, Workspace& ws, const StepTensors& step, const TensorView& x, KvCache& kv,
                             const TensorView& out) const {
  const int64_t n = x.rows(), nh = attn_.n_head, nkv = attn_.n_kv_head, hd = attn_.head_dim;
  CAI_ASSIGN_OR_RETURN(TensorView q, ws.f32("attn.q", {n, nh * hd}));
  CAI_ASSIGN_OR_RETURN(TensorView k, ws.f32("attn.k", {n, nkv * hd}));
  CAI_ASSIGN_OR_RETURN(TensorView v, ws.f32("attn.v", {n, nkv * hd}));
  CAI_ASSIGN_OR_RETURN(TensorView o, ws.f32("attn.o", {n, nh * hd}));
  hal::AttentionParams p = attn_;
  p.block_size = kv.block_size();
  const TensorView q_heads = q.reshaped({n, nh, hd});
  {
    profile::Scope scope("attn_proj");
    CAI_TRY(ops::dense_gemm(d, wq_, x, bq_ ? &*bq_ : nullptr, q));
    CAI_TRY(ops::dense_gemm(d, wk_, x, bk_ ? &*bk_ : nullptr, k));
    CAI_TRY(ops::dense_gemm(d, wv_, x, bv_ ? &*bv_ : nullptr, v));
    CAI_TRY(ops::rope(d, q_heads, step.positions, rope_inv_freq_, rope_));
    CAI_TRY(ops::rope(d, k.reshaped({n, nkv, hd}), step.positions, rope_inv_freq_, rope_));
    CAI_TRY(ops::kv_write(d, k, step.slots, kv.k(layer_, kv_rank_)));
    CAI_TRY(ops::kv_write(d, v, step.slots, kv.v(layer_, kv_rank_)));
  }
  {
    profile::Scope scope("attention");
    const TensorView k_cache = kv.k(layer_, kv_rank_).reshaped({kv.n_slots(), nkv, hd});
    const TensorView v_cache = kv.v(layer_, kv_rank_).reshaped({kv.n_slots(), nkv, hd});
    CAI_TRY(ops::attention_gqa(d, p, step.attn, q_heads, k_cache, v_cache, o));
  }
  profile::Scope scope("attn_proj");
  return ops::dense_gemm(d, wo_, o, nullptr, out);
}

}  // namespace cai
