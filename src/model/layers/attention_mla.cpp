// AttentionMla: q (optionally through a LoRA bottleneck), the latent KV path, RoPE on the decoupled dims, absorbed MLA.
#include "model/layers/attention_mla.h"

#include <cmath>

#include "core/profile.h"
#include "ops/ops.h"

namespace cai {

float AttentionMla::softmax_scale(const ModelConfig& cfg) {
  float scale = 1.0f / std::sqrt(static_cast<float>(cfg.qk_nope_head_dim + cfg.qk_rope_head_dim));
  if (cfg.yarn_factor > 1.0f && cfg.yarn_mscale_all_dim > 0.0f) {
    const float m = yarn_get_mscale(cfg.yarn_factor, cfg.yarn_mscale_all_dim);
    scale *= m * m;
  }
  return scale;
}

Result<AttentionMla> AttentionMla::load(WeightStore& w, const ModelConfig& cfg, int layer) {
  AttentionMla a;
  a.layer_ = layer;
  a.q_lora_ = cfg.q_lora_rank;
  a.eps_ = cfg.rms_norm_eps;
  const int64_t hidden = cfg.hidden_size, nh = cfg.num_attention_heads, lora = cfg.kv_lora_rank;
  const int64_t qk = cfg.qk_nope_head_dim + cfg.qk_rope_head_dim;
  const std::string p = "blk." + std::to_string(layer) + ".";
  if (cfg.q_lora_rank > 0) {
    CAI_ASSIGN_OR_RETURN(a.wq_a_, w.get_gemm_weight(p + "attn_q_a.weight", {cfg.q_lora_rank, hidden}));
    CAI_ASSIGN_OR_RETURN(a.q_a_norm_, w.get_f32(p + "attn_q_a_norm.weight", {cfg.q_lora_rank}));
    CAI_ASSIGN_OR_RETURN(a.wq_b_, w.get_gemm_weight(p + "attn_q_b.weight", {nh * qk, cfg.q_lora_rank}));
  } else {
    CAI_ASSIGN_OR_RETURN(a.wq_, w.get_gemm_weight(p + "attn_q.weight", {nh * qk, hidden}));
  }
  CAI_ASSIGN_OR_RETURN(a.wkv_a_, w.get_gemm_weight(p + "attn_kv_a_mqa.weight", {lora + cfg.qk_rope_head_dim, hidden}));
  CAI_ASSIGN_OR_RETURN(a.kv_norm_, w.get_f32(p + "attn_kv_a_norm.weight", {lora}));
  // Per-head W_UK / W_UV rows, read by dense GEMMs over each head's row range (16-row groups where packed).
  CAI_ASSIGN_OR_RETURN(TensorView k_b, w.get_gemm_weight(p + "attn_k_b.weight", {nh, lora, cfg.qk_nope_head_dim}));
  CAI_ASSIGN_OR_RETURN(TensorView v_b, w.get_gemm_weight(p + "attn_v_b.weight", {nh, cfg.v_head_dim, lora}));
  a.w_uk_ = k_b.reshaped({nh * lora, cfg.qk_nope_head_dim});
  a.w_uv_ = v_b.reshaped({nh * cfg.v_head_dim, lora});
  CAI_ASSIGN_OR_RETURN(a.wo_, w.get_gemm_weight(p + "attn_output.weight", {hidden, nh * cfg.v_head_dim}));
  a.mla_ = {cfg.num_attention_heads,
            cfg.qk_nope_head_dim,
            cfg.qk_rope_head_dim,
            cfg.v_head_dim,
            cfg.kv_lora_rank,
            softmax_scale(cfg),
            0};
  a.rope_ = cfg.rope_params();
  CAI_ASSIGN_OR_RETURN(a.rope_inv_freq_, w.upload_f32("rope.inv_freq", rope_inv_freqs(cfg.rope_freq_config()),
                                                      w.placement().layer_device(layer)));
  if (cfg.yarn_factor > 1.0f && cfg.yarn_mscale_all_dim > 0.0f)
    a.rope_.mscale =
        yarn_get_mscale(cfg.yarn_factor, cfg.yarn_mscale) / yarn_get_mscale(cfg.yarn_factor, cfg.yarn_mscale_all_dim);
  return a;
}

Status AttentionMla::forward(hal::Device& d, Workspace& ws, const StepTensors& step, const TensorView& x, KvCache& kv,
                             const TensorView& out) const {
  const int64_t n = x.rows(), nh = mla_.n_head, qk = mla_.qk_nope + mla_.qk_rope, lora = mla_.kv_lora;
  CAI_ASSIGN_OR_RETURN(TensorView q, ws.f32("mla.q", {n, nh * qk}));
  CAI_ASSIGN_OR_RETURN(TensorView kva, ws.f32("mla.kv_a", {n, lora + mla_.qk_rope}));
  CAI_ASSIGN_OR_RETURN(TensorView ckv, ws.f32("mla.c_kv", {n, lora}));
  CAI_ASSIGN_OR_RETURN(TensorView o, ws.f32("mla.o", {n, nh * mla_.v_head_dim}));
  {
    profile::Scope scope("attn_proj");
    if (wq_) {
      CAI_TRY(ops::dense_gemm(d, *wq_, x, nullptr, q));
    } else {
      CAI_ASSIGN_OR_RETURN(TensorView qa, ws.f32("mla.q_a", {n, q_lora_}));
      CAI_TRY(ops::dense_gemm(d, *wq_a_, x, nullptr, qa));
      CAI_TRY(ops::rms_norm(d, qa, *q_a_norm_, eps_, qa));
      CAI_TRY(ops::dense_gemm(d, *wq_b_, qa, nullptr, q));
    }
    hal::RopeParams rope = rope_;
    rope.rot_offset = mla_.qk_nope;  // each head is [nope | rope]
    CAI_TRY(ops::rope(d, q.reshaped({n, nh, qk}), step.positions, rope_inv_freq_, rope));

    // Latent row [c_kv | k_rope]: normalise c_kv, rotate k_rope (one head shared by all), then cache it.
    CAI_TRY(ops::dense_gemm(d, wkv_a_, x, nullptr, kva));
    CAI_TRY(ops::copy_cols(d, kva, 0, ckv, 0, lora));
    CAI_TRY(ops::rms_norm(d, ckv, kv_norm_, eps_, ckv));
    CAI_TRY(ops::copy_cols(d, ckv, 0, kva, 0, lora));
    rope.rot_offset = static_cast<int>(lora);
    CAI_TRY(ops::rope(d, kva.reshaped({n, 1, lora + mla_.qk_rope}), step.positions, rope_inv_freq_, rope));
    CAI_TRY(ops::kv_write(d, kva, step.slots, kv.k(layer_, kv_rank_)));
  }
  {
    profile::Scope scope("attention");  // absorbing W_UK / W_UV included
    hal::MlaParams p = mla_;
    p.block_size = kv.block_size();
    CAI_TRY(ops::attention_mla(d, p, step.attn, q.reshaped({n, nh, qk}), w_uk_, w_uv_, kv.k(layer_, kv_rank_), o));
  }
  profile::Scope scope("attn_proj");
  return ops::dense_gemm(d, wo_, o, nullptr, out);
}

}  // namespace cai
