// AttentionMla: DeepSeek multi-head latent attention. The KV cache holds only [c_kv | k_rope] per token; attention runs
// in the absorbed form (W_UK folded into q, W_UV applied after attention) for prefill and decode alike.
#pragma once

#include <optional>

#include "model/config.h"
#include "model/kv_cache.h"
#include "model/model.h"
#include "model/weights.h"
#include "model/workspace.h"

namespace cai {

class AttentionMla {
 public:
  static Result<AttentionMla> load(WeightStore& w, const ModelConfig& cfg, int layer);
  // Which tensor-parallel shard of its layer's KV cache this rank's attention uses (KvCache::k(layer, rank)).
  void set_kv_rank(int rank) { kv_rank_ = rank; }
  // x [n_tok, hidden] (normed input) → out [n_tok, hidden].
  Status forward(hal::Device& d, Workspace& ws, const StepTensors& step, const TensorView& x, KvCache& kv,
                 const TensorView& out) const;
  // Softmax scale: (qk_nope + qk_rope)^-0.5, times get_m(factor, mscale_all_dim)^2 under YaRN.
  static float softmax_scale(const ModelConfig& cfg);

 private:
  int layer_ = 0;
  int kv_rank_ = 0;
  int q_lora_ = 0;
  float eps_ = 1e-6f;
  hal::MlaParams mla_;
  hal::RopeParams rope_;
  TensorView rope_inv_freq_;                          // [rope_dim / 2] F32 on the device
  std::optional<TensorView> wq_a_, q_a_norm_, wq_b_;  // [q_lora, hidden], [q_lora], [n_head*(nope+rope), q_lora]
  std::optional<TensorView> wq_;                      // [n_head*(nope+rope), hidden] when q_lora_rank is null
  TensorView wkv_a_;                                  // [kv_lora + rope, hidden]
  TensorView kv_norm_;                                // [kv_lora]
  TensorView w_uk_;  // [n_head*kv_lora, nope]: attn_k_b, row (h, c) = column c of head h's W_UK
  TensorView w_uv_;  // [n_head*v, kv_lora]: attn_v_b, head h's W_UV rows
  TensorView wo_;    // [hidden, n_head*v]
};

}  // namespace cai
