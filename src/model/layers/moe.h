// MoeFfn: DeepSeek mixture of experts: router (sigmoid/softmax, group-limited top-k), routed experts, shared experts.
#pragma once

#include <optional>

#include "model/config.h"
#include "model/device_group.h"
#include "model/layers/mlp.h"
#include "model/weights.h"
#include "model/workspace.h"

namespace cai {

class MoeFfn {
 public:
  static Result<MoeFfn> load(WeightStore& w, const ModelConfig& cfg, int layer);
  // x [n_tok, hidden] (normed input) → out [n_tok, hidden], both on the router's device d. Routed experts placed on
  // another device of the group (--moe-device) run there: x, the expert ids and weights go over, their sum comes back.
  Status forward(hal::Device& d, DeviceGroup& group, const TensorView& x, const TensorView& out) const;

 private:
  hal::MoeGateParams gate_params_;
  TensorView router_;               // [n_experts, hidden]
  std::optional<TensorView> bias_;  // [n_experts] e_score_correction_bias (selection only)
  hal::ExpertWeights experts_;      // stacked: [E, ffn, hidden], [E, ffn, hidden], [E, hidden, ffn]
  std::optional<DenseMlp> shared_;  // n_shared_experts fused into one MLP of width n_shared * ffn
};

}  // namespace cai
