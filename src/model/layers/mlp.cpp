// DenseMlp forward.
#include "model/layers/mlp.h"

#include "core/profile.h"
#include "ops/ops.h"

namespace cai {

Result<DenseMlp> DenseMlp::load(WeightStore& w, const std::string& prefix, const std::string& suffix, int64_t hidden,
                                int64_t ffn) {
  DenseMlp m;
  m.ffn_ = ffn;
  m.phase_ = suffix == ".weight" ? "mlp" : "shared_experts";
  CAI_ASSIGN_OR_RETURN(m.gate_, w.get_gemm_weight(prefix + "ffn_gate" + suffix, {ffn, hidden}, kGateUpGrain));
  CAI_ASSIGN_OR_RETURN(m.up_, w.get_gemm_weight(prefix + "ffn_up" + suffix, {ffn, hidden}, kGateUpGrain));
  CAI_ASSIGN_OR_RETURN(m.down_, w.get_gemm_weight(prefix + "ffn_down" + suffix, {hidden, ffn}));
  return m;
}

Status DenseMlp::forward(hal::Device& d, Workspace& ws, const TensorView& x, const TensorView& out) const {
  profile::Scope scope(phase_);
  const int64_t n = x.rows();
  CAI_ASSIGN_OR_RETURN(TensorView g, ws.f32("mlp.gate", {n, ffn_}));
  CAI_ASSIGN_OR_RETURN(TensorView u, ws.f32("mlp.up", {n, ffn_}));
  CAI_TRY(ops::dense_gemm(d, gate_, x, nullptr, g));
  CAI_TRY(ops::dense_gemm(d, up_, x, nullptr, u));
  CAI_TRY(ops::swiglu(d, g, u, g));
  return ops::dense_gemm(d, down_, g, nullptr, out);
}

}  // namespace cai
