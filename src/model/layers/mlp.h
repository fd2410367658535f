// DenseMlp: down(silu(gate(x)) * up(x)), the SwiGLU feed-forward of Llama, Qwen2 and DeepSeek's dense layers.
#pragma once

#include <string>

#include "model/weights.h"
#include "model/workspace.h"

namespace cai {

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
