// AttentionGqa: q/k/v projections (+ optional biases), RoPE, paged KV write, grouped-query attention, output
// projection.
#pragma once

#include <optional>

#include "model/config.h"
#include "model/kv_cache.h"
#include "model/model.h"
#include "model/weights.h"
#include "model/workspace.h"

namespace cai {

class AttentionGqa {
 public:
  // Reads blk.<layer>.attn_{q,k,v,output}.weight (and .bias for q/k/v when cfg.attention_bias).
  static Result<AttentionGqa> load(WeightStore& w, const ModelConfig& cfg, int layer);
  // Which tensor-parallel shard of its layer's KV cache this rank's attention uses (KvCache::k(layer, rank)).
  void set_kv_rank(int rank) { kv_rank_ = rank; }
  // x [n_tok, hidden] (normed input) → out [n_tok, hidden].
  Status forward(hal::Device& d, Workspace& ws, const StepTensors& step, const TensorView& x, KvCache& kv,
                 const TensorView& out) const;

 private:
  int layer_ = 0;
  int kv_rank_ = 0;
  hal::AttentionParams attn_;
  hal::RopeParams rope_;
  TensorView rope_inv_freq_;                // [rope_dim / 2] F32 on the device
  TensorView wq_, wk_, wv_, wo_;            // [n_head*hd, hidden], [n_kv*hd, hidden] ×2, [hidden, n_head*hd]
  std::optional<TensorView> bq_, bk_, bv_;  // [n_head*hd], [n_kv*hd] ×2
};

}  // namespace cai
