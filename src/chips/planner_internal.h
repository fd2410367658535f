// Shared between the planner's files: the resolved inputs and the roofline pass.
#pragma once

#include <optional>

#include "chips/planner.h"
#include "core/dtype.h"

namespace cai::chips::detail {

struct PlanInputs {
  const ModelFootprint& model;
  const DeviceProfile& chip;
  PlanRequest request;  // ctx resolved
  DType kv_dtype;
  std::optional<double> host_offload_below;
  double memory_gib;  // per card: the request's override, else the profile's
};

inline size_t ceil_div(size_t a, size_t b) { return (a + b - 1) / b; }
// Sequences one replica serves.
inline int64_t batch_per_replica(const PlanInputs& in, const PlanLayout& l) {
  return (in.request.batch + l.data_parallel - 1) / l.data_parallel;
}
// KV bytes of one layer and token as one of `tp` cards holds them: MLA's latent is whole on every card; GQA shards
// the KV heads (each card keeps at least one).
size_t kv_layer_bytes_per_card(const ModelConfig& cfg, DType kv_dtype, int tp);
// Multiply-adds ×2 of attention scores and values for one token against `ctx` cached positions, all layers' heads
// of one layer (MLA in its absorbed form: scores over kv_lora + rope, values over kv_lora).
double attention_flops_per_token(const ModelConfig& cfg, double ctx);
// The LM head's part of the model: the output matrix, or the embedding a tied model reads as its head.
inline const PartSize& head_part(const ModelFootprint& fp) { return fp.output.params > 0 ? fp.output : fp.embedding; }
// Parameters one token reads: attention, dense/shared FFN, top-k routed experts, and the LM head.
int64_t active_params(const ModelFootprint& fp);
// Fills decode_* and prefill_* of `plan` (left empty where the profile lacks bandwidth / throughput).
void estimate_speed(const PlanInputs& in, Plan& plan);

}  // namespace cai::chips::detail
