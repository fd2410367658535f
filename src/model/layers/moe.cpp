// MoeFfn forward: router logits in F32 → moe_gate → sparse_moe over the selected experts → + shared experts.
#include "model/layers/moe.h"

#include "core/profile.h"
#include "ops/ops.h"

namespace cai {

Result<MoeFfn> MoeFfn::load(WeightStore& w, const ModelConfig& cfg, int layer) {
  MoeFfn m;
  const int64_t hidden = cfg.hidden_size, n_e = cfg.n_routed_experts, ffn = cfg.moe_intermediate_size;
  // Expert parallel: this rank's range of the experts, whole; its shared experts are a 1/parts slice of their columns.
  const int parts = w.expert_parts();
  const int64_t n_local = n_e / parts, shared_ffn = ffn * cfg.n_shared_experts / parts;
  m.experts_.expert_begin = static_cast<int32_t>(n_local * w.expert_part());
  const std::string p = "blk." + std::to_string(layer) + ".";
  m.gate_params_ = {cfg.n_routed_experts,     cfg.num_experts_per_tok,       cfg.n_group,
                    cfg.topk_group,           cfg.scoring_func == "sigmoid", cfg.norm_topk_prob,
                    cfg.routed_scaling_factor};
  CAI_ASSIGN_OR_RETURN(m.router_, w.get(p + "ffn_gate_inp.weight", {n_e, hidden}));
  if (w.has(p + "exp_probs_b.bias")) {
    CAI_ASSIGN_OR_RETURN(m.bias_, w.get_f32(p + "exp_probs_b.bias", {n_e}));
  }
  CAI_ASSIGN_OR_RETURN(m.experts_.gate,
                       w.get_gemm_weight(experts_name(layer, "gate"), {n_local, ffn, hidden}, kGateUpGrain));
  CAI_ASSIGN_OR_RETURN(m.experts_.up,
                       w.get_gemm_weight(experts_name(layer, "up"), {n_local, ffn, hidden}, kGateUpGrain));
  CAI_ASSIGN_OR_RETURN(m.experts_.down, w.get_gemm_weight(experts_name(layer, "down"), {n_local, hidden, ffn}));
  if (cfg.n_shared_experts > 0) {
    CAI_ASSIGN_OR_RETURN(m.shared_, DenseMlp::load(w, p, "_shexp.weight", hidden, shared_ffn));
  }
  return m;
}

Status MoeFfn::forward(hal::Device& d, DeviceGroup& group, const TensorView& x, const TensorView& out) const {
  const int64_t n = x.rows(), k = gate_params_.top_k;
  Workspace& ws = group.ws(d);
  CAI_ASSIGN_OR_RETURN(TensorView logits, ws.f32("moe.logits", {n, gate_params_.n_experts}));
  CAI_ASSIGN_OR_RETURN(TensorView weights, ws.f32("moe.weights", {n, k}));
  CAI_ASSIGN_OR_RETURN(TensorView ids, ws.get("moe.ids", DType::kI32, {n, k}));
  {
    profile::Scope scope("moe_gate");
    CAI_TRY(ops::dense_gemm(d, router_, x, nullptr, logits));
    CAI_TRY(ops::moe_gate(d, gate_params_, logits, bias_ ? &*bias_ : nullptr, ids, weights));
  }
  hal::Device& e = *experts_.gate.device;
  if (&e == &d) {
    profile::Scope scope("routed_experts");
    CAI_TRY(ops::sparse_moe(d, experts_, x, ids, weights, out));
  } else {
    CAI_ASSIGN_OR_RETURN(const TensorView xe, group.move_to(x, e, "moe.x"));
    CAI_ASSIGN_OR_RETURN(const TensorView ide, group.move_to(ids, e, "moe.ids"));
    CAI_ASSIGN_OR_RETURN(const TensorView we, group.move_to(weights, e, "moe.weights"));
    CAI_ASSIGN_OR_RETURN(const TensorView oute, group.ws(e).f32("moe.out", {n, x.cols()}));
    {
      profile::Scope scope("routed_experts");
      CAI_TRY(ops::sparse_moe(e, experts_, xe, ide, we, oute));
    }
    CAI_TRY(group.copy(oute, out));
  }
  if (!shared_) return {};
  CAI_ASSIGN_OR_RETURN(TensorView sh, ws.f32("moe.shared", {n, x.cols()}));
  CAI_TRY(shared_->forward(d, ws, x, sh));
  profile::Scope scope("shared_experts");
  return ops::add(d, out, sh, out);
}

}  // namespace cai
