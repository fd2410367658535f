// DenseMlp: down(silu(gate(x)) * up(x)), the SwiGLU feed-forward of Llama, Qwen2 and DeepSeek's dense layers.
#pragma once

#include <string>

#include "model/weights.h"
#include "model/workspace.h"

namespace cai {

// The activations the gate and up projections (dense MLPs, shared and routed experts) multiply may be 8-bit on a fast
// path whatever the weight type: on TinyStories-656K Q8_0, 8-bit activations for gate and up alone keep the exact
// path's next tokens with a margin that 8-bit activations for every projection lose, and gate and up carry more than
// half of a Qwen2-1.5B layer's multiply-adds (tests/cli/precision_cli_test.cpp;
// docs/perf/2026-12-03-q8_0-gate-up-int8.md).
inline constexpr hal::ActivationGrain kGateUpGrain = hal::ActivationGrain::k8Bit;

class DenseMlp {
 public:
  // Reads <prefix>ffn_{gate,up,down}<suffix>: gate/up [ffn, hidden], down [hidden, ffn].
  static Result<DenseMlp> load(WeightStore& w, const std::string& prefix, const std::string& suffix, int64_t hidden,
                               int64_t ffn);
  Status forward(hal::Device& d, Workspace& ws, const TensorView& x, const TensorView& out) const;

 private:
  int64_t ffn_ = 0;
  const char* phase_ = "mlp";  // profile phase: "mlp" (dense layers) or "shared_experts"
  TensorView gate_, up_, down_;
};

}  // namespace cai
