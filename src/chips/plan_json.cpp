// plan_to_json: the machine-readable form of a Plan (`cai plan --json`).
#include "chips/planner.h"

namespace cai::chips {

namespace {

using nlohmann::json;

template <typename T>
json opt(const std::optional<T>& v) {
  return v ? json(*v) : json(nullptr);
}

json layout_json(const Plan& p, const ModelFootprint& m) {
  const PlanLayout& l = p.layout;
  json stages = json::array();
  for (const PlanStage& s : l.stages)
    stages.push_back({{"layers", {s.first_layer, s.first_layer + s.n_layers - 1}},
                      {"cards", l.tensor_parallel},
                      {"weights_bytes_per_card", s.weights_bytes_per_card},
                      {"kv_bytes_per_token_per_card", s.kv_bytes_per_token_per_card},
                      {"kv_offload_layers", s.kv_offload_layers}});
  const int e = m.config.n_routed_experts;
  return {{"tensor_parallel", l.tensor_parallel},
          {"expert_parallel", l.expert_parallel},
          {"pipeline_parallel", l.pipeline_parallel},
          {"data_parallel", l.data_parallel},
          {"cards_used", l.cards_used},
          {"nodes", (l.cards_used + kCardsPerNode - 1) / kCardsPerNode},
          {"attention", l.tensor_parallel > 1 ? "tensor parallel" : "one card"},
          {"experts_per_card", e > 0 ? json((e + l.expert_parallel - 1) / l.expert_parallel) : json(nullptr)},
          {"stages", stages}};
}

}  // namespace

nlohmann::json plan_to_json(const Plan& p, const ModelFootprint& m, const DeviceProfile& chip) {
  const ModelConfig& c = m.config;
  json j;
  j["model"] = {{"source", m.source},
                {"format", m.format},
                {"architecture", c.architecture},
                {"layers", c.num_hidden_layers},
                {"params", m.params()},
                {"active_params_per_token", p.active_params},
                {"bytes_by_dtype", m.bytes_by_dtype},
                {"fp8_weights", m.fp8_weights},
                {"max_position_embeddings", c.max_position_embeddings}};
  j["chip"] = {{"id", chip.id},
               {"name", chip.name},
               {"memory_gib", opt(chip.memory_gib)},
               {"bandwidth_gbs", opt(chip.bandwidth_gbs)},
               {"bf16_tflops", opt(chip.bf16_tflops)},
               {"int8_tops", opt(chip.int8_tops)},
               {"fp8", opt(chip.fp8)},
               {"interconnect_gbs", opt(chip.interconnect_gbs)}};
  j["cards"] = p.request.cards;
  j["ctx"] = p.request.ctx;
  j["batch"] = p.request.batch;
  j["kv_dtype"] = p.kv_dtype;
  j["fits"] = p.fits;
  j["weights_fit"] = p.weights_fit;
  j["min_cards"] = opt(p.min_cards);
  j["weights_bytes"] = p.weights_bytes;
  j["weights_bytes_per_card"] = p.weights_bytes_per_card;
  j["kv_bytes_per_token"] = p.kv_bytes_per_token;
  j["kv_bytes_per_token_per_card"] = p.kv_bytes_per_token_per_card;
  j["activation_bytes_per_card"] = p.activation_bytes_per_card;
  j["card_bytes"] = p.card_bytes;
  j["reserved_bytes_per_card"] = p.reserved_bytes_per_card;
  j["kv_capacity_tokens"] = p.kv_capacity_tokens;
  j["max_context"] = p.max_context;
  j["max_batch"] = p.max_batch;
  j["kv_offload_layers"] = p.kv_offload_layers;
  j["kv_host_bytes"] = p.kv_host_bytes;
  j["decode_tok_s"] = p.decode_tok_s_per_sequence ? json{{"per_sequence", *p.decode_tok_s_per_sequence},
                                                         {"aggregate", *p.decode_tok_s_aggregate},
                                                         {"step_ms", *p.decode_step_ms},
                                                         {"comm_ms", opt(p.decode_comm_ms)},
                                                         {"bound", p.decode_bound}}
                                                  : json(nullptr);
  j["prefill"] = p.prefill_tok_s ? json{{"prompt_tokens", p.request.ctx},
                                        {"tok_s", *p.prefill_tok_s},
                                        {"seconds", *p.prefill_seconds},
                                        {"comm_seconds", opt(p.prefill_comm_seconds)}}
                                 : json(nullptr);
  j["layout"] = layout_json(p, m);
  j["efficiency"] = {{"weights", p.efficiency.weights},
                     {"decode", p.efficiency.decode},
                     {"decode_source", p.efficiency.decode_source},
                     {"prefill", p.efficiency.prefill},
                     {"prefill_source", p.efficiency.prefill_source}};
  j["assumptions"] = {
      {"bandwidth_efficiency", p.efficiency.decode},
      {"compute_efficiency", p.efficiency.prefill},
      {"runtime_reserve_fraction", kRuntimeReserve},
      {"cards_per_node", kCardsPerNode},
      {"step_tokens", p.request.step_tokens},
      {"host_link_gbs", kHostLinkGBs},
      {"activations", "F32 workspace per token x max(step_tokens, batch) + logits rows, whole on every card"},
      {"link_efficiency", kLinkEfficiency},
      {"collective_latency_us", kCollectiveLatencyUs},
      {"communication",
       "F32 activations over interconnect_gbs x link_efficiency: TP ring all-reduce "
       "of attention and FFN outputs per layer, EP all-to-all to the top-k experts' "
       "cards and back per MoE layer, one transfer per stage boundary; each plus "
       "collective_latency_us"}};
  j["warnings"] = p.warnings;
  return j;
}

}  // namespace cai::chips
