// Roofline estimates: a decode step streams the weights its tokens touch plus the KV cache at the context, over the
// cards' bandwidth (or is bound by their math); prefill is bound by math over every card of a replica.
#include <algorithm>
#include <cmath>

#include "chips/planner_internal.h"
#include "model/arch_registry.h"

namespace cai::chips::detail {

size_t kv_layer_bytes_per_card(const ModelConfig& cfg, DType kv_dtype, int tp) {
  ModelConfig one = cfg;
  one.num_hidden_layers = 1;
  if (!cfg.is_mla()) one.num_key_value_heads = (cfg.num_key_value_heads + tp - 1) / tp;
  return kv_spec_for(one, kv_dtype).bytes_per_token();
}

double attention_flops_per_token(const ModelConfig& c, double ctx) {
  const double width = c.is_mla() ? 2.0 * c.kv_lora_rank + c.qk_rope_head_dim : 2.0 * c.head_dim;
  return 2.0 * c.num_attention_heads * width * ctx;
}

int64_t active_params(const ModelFootprint& fp) {
  const ModelConfig& c = fp.config;
  int64_t p = head_part(fp).params;
  for (const LayerFootprint& l : fp.layers) {
    p += l.attention.params + l.ffn.params;
    if (c.n_routed_experts > 0) p += l.experts.params / c.n_routed_experts * c.num_experts_per_tok;
  }
  return p;
}

namespace {

// Peak math throughput per card in FLOP/s: BF16, else INT8 (W8A8); nullopt when the profile has neither.
std::optional<double> peak_flops(const DeviceProfile& chip) {
  if (chip.bf16_tflops) return *chip.bf16_tflops * 1e12;
  if (chip.int8_tops) return *chip.int8_tops * 1e12;
  return std::nullopt;
}

// Expected distinct experts `b` tokens touch when each picks k of E uniformly: E·(1 − (1 − k/E)^b).
double experts_touched(const ModelConfig& c, double b) {
  if (c.n_routed_experts == 0) return 0;
  const double e = c.n_routed_experts, k = c.num_experts_per_tok;
  return e * (1.0 - std::pow(1.0 - k / e, b));
}

// Seconds the layout's communication takes for `tokens` tokens in one engine step, over the profile's interconnect:
// TP all-reduces the attention and FFN outputs of every layer (ring: 2(tp-1)/tp of the bytes per card), EP sends each
// token's hidden state to its experts' cards and back (all-to-all, (ep-1)/ep of the k copies leave the card), and each
// stage boundary sends the hidden states on; each collective or transfer also costs kCollectiveLatencyUs. Empty without
// interconnect_gbs; 0 on one card.
std::optional<double> comm_seconds(const PlanInputs& in, const PlanLayout& lay, double tokens) {
  const ModelConfig& c = in.model.config;
  const double tp = lay.tensor_parallel, ep = lay.expert_parallel, stages = static_cast<double>(lay.stages.size());
  if (tp == 1 && ep == 1 && stages <= 1) return 0.0;
  if (!in.chip.interconnect_gbs) return std::nullopt;
  const double link = *in.chip.interconnect_gbs * 1e9 * kLinkEfficiency, latency = kCollectiveLatencyUs * 1e-6;
  const double hidden_bytes = tokens * c.hidden_size * kActivationBytes, layers = c.num_hidden_layers;
  double seconds = 0;
  if (tp > 1) seconds += layers * 2 * (2 * (tp - 1) / tp * hidden_bytes / link + latency);
  if (ep > 1 && c.n_routed_experts > 0) {
    const double moe_layers = std::max(0, c.num_hidden_layers - c.first_k_dense_replace);
    seconds += moe_layers * 2 * ((ep - 1) / ep * c.num_experts_per_tok * hidden_bytes / link + latency);
  }
  seconds += (stages - 1) * (hidden_bytes / link + latency);
  return seconds;
}

void estimate_decode(const PlanInputs& in, Plan& p, std::optional<double> peak) {
  const ModelFootprint& m = in.model;
  const ModelConfig& c = m.config;
  const PlanLayout& lay = p.layout;
  const double b = static_cast<double>(batch_per_replica(in, lay)), ctx = static_cast<double>(in.request.ctx);
  const double tp = lay.tensor_parallel, ep = lay.expert_parallel, touched = experts_touched(c, b);
  const double bw = *in.chip.bandwidth_gbs * 1e9 * p.efficiency.decode;
  const size_t kv_layer = kv_layer_bytes_per_card(c, in.kv_dtype, lay.tensor_parallel);
  double t_mem = 0, t_math = 0, t_step = 0;
  for (size_t s = 0; s < lay.stages.size(); ++s) {
    const PlanStage& st = lay.stages[s];
    double bytes = 0, flops = 0;
    for (int l = st.first_layer; l < st.first_layer + st.n_layers; ++l) {
      const LayerFootprint& lf = m.layers[static_cast<size_t>(l)];
      bytes += static_cast<double>(lf.attention.bytes + lf.ffn.bytes) / tp;
      flops += 2.0 * b * static_cast<double>(lf.attention.params + lf.ffn.params) / tp;
      flops += b * attention_flops_per_token(c, ctx) / tp;
      if (c.n_routed_experts > 0) {
        bytes += static_cast<double>(m.expert_bytes(l)) * touched / ep;
        flops += 2.0 * b * c.num_experts_per_tok * static_cast<double>(lf.experts.params / c.n_routed_experts) / ep;
      }
    }
    if (s + 1 == lay.stages.size()) {
      const PartSize& head = head_part(m);
      bytes += static_cast<double>(head.bytes) / tp;
      flops += 2.0 * b * static_cast<double>(head.params) / tp;
    }
    const double kv_tokens = b * ctx;
    bytes += kv_tokens * static_cast<double>(kv_layer) * (st.n_layers - st.kv_offload_layers);
    const double t_host = kv_tokens * static_cast<double>(kv_layer) * st.kv_offload_layers / (kHostLinkGBs * 1e9);
    const double sm = bytes / bw, sc = peak ? flops / (*peak * p.efficiency.prefill) : 0.0;
    t_mem += sm, t_math += sc;
    t_step += std::max(sm, sc) + t_host;
  }
  if (const std::optional<double> comm = comm_seconds(in, lay, b)) {
    t_step += *comm;
    if (*comm > 0) p.decode_comm_ms = *comm * 1e3;
  }
  p.decode_step_ms = t_step * 1e3;
  p.decode_tok_s_per_sequence = 1.0 / t_step;
  p.decode_tok_s_aggregate = b * lay.data_parallel / t_step;
  p.decode_bound = t_math > t_mem ? "compute" : "memory";
}

// One prompt of ctx tokens on one replica: math over all its cards (chunks pipeline through the stages; the head for
// the last position only), at least one pass over each card's weights per engine step of step_tokens tokens.
void estimate_prefill(const PlanInputs& in, Plan& p, double peak) {
  const ModelConfig& c = in.model.config;
  const double n = static_cast<double>(in.request.ctx);
  // The head runs for the prompt's last position only: the logits of the others are never computed.
  const PartSize& head = head_part(in.model);
  const double body = static_cast<double>(p.active_params - head.params);
  const double flops = 2.0 * body * n + 2.0 * static_cast<double>(head.params) +
                       c.num_hidden_layers * attention_flops_per_token(c, 1.0) * n * (n + 1) / 2;
  const double cards = p.layout.tensor_parallel * p.layout.pipeline_parallel;
  double seconds = flops / (cards * peak * p.efficiency.prefill);
  if (in.chip.bandwidth_gbs) {
    double weights = 0;
    for (const PlanStage& st : p.layout.stages) weights += static_cast<double>(st.weights_bytes_per_card);
    const double steps = std::ceil(n / in.request.step_tokens);
    seconds = std::max(seconds, steps * weights / (*in.chip.bandwidth_gbs * 1e9 * p.efficiency.decode));
  }
  if (const std::optional<double> comm = comm_seconds(in, p.layout, n)) {
    seconds += *comm;
    if (*comm > 0) p.prefill_comm_seconds = *comm;
  }
  p.prefill_seconds = seconds;
  p.prefill_tok_s = n / seconds;
}

}  // namespace

void estimate_speed(const PlanInputs& in, Plan& p) {
  const std::optional<double> peak = peak_flops(in.chip);
  if (in.chip.bandwidth_gbs && *in.chip.bandwidth_gbs > 0) estimate_decode(in, p, peak);
  if (peak) estimate_prefill(in, p, *peak);
}

}  // namespace cai::chips::detail
