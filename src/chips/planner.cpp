// make_plan: pick the layout (TP/EP inside a node, pipeline stages across nodes, replicas), size every card's memory,
// derive the largest context and batch, decide KV offload to host, then estimate speed and collect warnings.
#include "chips/planner.h"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <cmath>

#include "chips/planner_internal.h"
#include "model/arch_registry.h"
#include "model/kv_cache.h"

namespace cai::chips {

using detail::ceil_div;
using detail::PlanInputs;

namespace {

constexpr double kGiB = 1024.0 * 1024.0 * 1024.0;

// Layers split evenly into `pp` stages (the first stages take the remainder); per-card weights and KV of each.
std::vector<PlanStage> make_stages(const PlanInputs& in, int tp, int pp) {
  const ModelFootprint& m = in.model;
  const int n_layers = m.config.num_hidden_layers;
  const int ep = m.config.n_routed_experts > 0 ? tp : 1;
  const size_t kv_layer = detail::kv_layer_bytes_per_card(m.config, in.kv_dtype, tp);
  const size_t head = m.output.bytes > 0 ? m.output.bytes : m.embedding.bytes;  // tied: the embedding is the head
  std::vector<PlanStage> stages;
  int first = 0;
  for (int s = 0; s < pp; ++s) {
    PlanStage st;
    st.first_layer = first;
    st.n_layers = n_layers / pp + (s < n_layers % pp ? 1 : 0);
    for (int l = first; l < first + st.n_layers; ++l) {
      const LayerFootprint& lf = m.layers[static_cast<size_t>(l)];
      st.weights_bytes_per_card += ceil_div(lf.attention.bytes + lf.ffn.bytes, tp) + ceil_div(lf.experts.bytes, ep);
    }
    if (s == 0) st.weights_bytes_per_card += ceil_div(m.embedding.bytes, tp);
    if (s == pp - 1 && (m.output.bytes > 0 || pp > 1)) st.weights_bytes_per_card += ceil_div(head, tp);
    if (s == pp - 1) st.weights_bytes_per_card += m.other.bytes;
    st.kv_bytes_per_token_per_card = kv_layer * static_cast<size_t>(st.n_layers);
    stages.push_back(st);
    first += st.n_layers;
  }
  return stages;
}

// Memory of one layout: weights and activations per card, KV capacity, fit, max context / batch, KV offload.
Plan evaluate(const PlanInputs& in, int tp, int pp, int dp) {
  const ModelConfig& cfg = in.model.config;
  Plan p;
  p.request = in.request;
  p.layout = {tp, cfg.n_routed_experts > 0 ? tp : 1, pp, dp, tp * pp * dp, make_stages(in, tp, pp)};
  const int64_t b = detail::batch_per_replica(in, p.layout), ctx = in.request.ctx;
  p.card_bytes = static_cast<size_t>(in.memory_gib * kGiB);
  p.reserved_bytes_per_card = static_cast<size_t>(static_cast<double>(p.card_bytes) * kRuntimeReserve);
  const int64_t usable = static_cast<int64_t>(p.card_bytes - p.reserved_bytes_per_card);
  p.activation_bytes_per_card =
      activation_bytes_per_token(cfg) * static_cast<size_t>(std::max<int64_t>(in.request.step_tokens, b)) +
      logits_bytes_per_row(cfg) * static_cast<size_t>(b);
  p.weights_fit = true;
  p.kv_capacity_tokens = INT64_MAX;
  for (const PlanStage& st : p.layout.stages) {
    p.weights_bytes_per_card = std::max(p.weights_bytes_per_card, st.weights_bytes_per_card);
    p.kv_bytes_per_token_per_card = std::max(p.kv_bytes_per_token_per_card, st.kv_bytes_per_token_per_card);
    const int64_t budget = usable - static_cast<int64_t>(st.weights_bytes_per_card + p.activation_bytes_per_card);
    if (budget <= 0) p.weights_fit = false;
    p.kv_capacity_tokens = std::min(
        p.kv_capacity_tokens, std::max<int64_t>(0, budget) / static_cast<int64_t>(st.kv_bytes_per_token_per_card));
  }
  if (!p.weights_fit) p.kv_capacity_tokens = 0;
  p.max_context = std::min<int64_t>(p.kv_capacity_tokens / b, cfg.max_position_embeddings);
  p.max_batch = p.kv_capacity_tokens / ctx * dp;
  p.fits = p.weights_fit && p.kv_capacity_tokens >= b * ctx;
  if (p.weights_fit && !p.fits && in.host_offload_below) {  // the layers whose KV does not fit go to host memory
    // The engine's host KV tier (KvHostTier) streams each host layer through one staging layer on the card, which
    // takes a layer's KV: a stage keeps one layer fewer than its budget holds, and needs room for at least one.
    const size_t kv_layer = detail::kv_layer_bytes_per_card(cfg, in.kv_dtype, tp) * static_cast<size_t>(b * ctx);
    bool every_stage_fits = true;
    for (PlanStage& st : p.layout.stages) {
      const int64_t budget = usable - static_cast<int64_t>(st.weights_bytes_per_card + p.activation_bytes_per_card);
      const double need = static_cast<double>(kv_layer) * st.n_layers;
      if (static_cast<double>(budget) >= need) continue;
      const int64_t layers_in_budget = budget / static_cast<int64_t>(kv_layer);
      if (static_cast<double>(budget) >= *in.host_offload_below * need || layers_in_budget < 1) {
        every_stage_fits = false;
        continue;
      }
      const int on_card = static_cast<int>(std::min<int64_t>(st.n_layers, layers_in_budget - 1));
      st.kv_offload_layers = st.n_layers - on_card;
      p.kv_offload_layers += st.kv_offload_layers;
      p.kv_host_bytes += static_cast<size_t>(st.kv_offload_layers) * kv_layer * static_cast<size_t>(tp * dp);
    }
    p.fits = every_stage_fits && p.kv_offload_layers > 0;
  }
  return p;
}

// The layout for `cards`: TP/EP over min(cards, 8) cards; the node groups become pipeline stages or replicas. The
// fewest stages that fit without offload win, then the fewest that fit with offload, else the largest KV capacity.
// max_context / max_batch become the most any of these layouts allows (more stages buy context, more replicas batch).
Plan best_layout(const PlanInputs& in, int cards) {
  const int tp = std::min(cards, kCardsPerNode), groups = cards / tp;
  std::optional<Plan> best;
  int64_t max_context = 0, max_batch = 0;
  auto rank = [](const Plan& p) { return p.fits ? (p.kv_offload_layers == 0 ? 2 : 1) : 0; };
  for (int pp = 1; pp <= std::min(groups, in.model.config.num_hidden_layers); ++pp) {
    if (groups % pp) continue;
    Plan p = evaluate(in, tp, pp, groups / pp);
    max_context = std::max(max_context, p.max_context);
    max_batch = std::max(max_batch, p.max_batch);
    if (!best || (best->fits && rank(p) > rank(*best)) ||
        (!best->fits && (rank(p) > 0 || p.kv_capacity_tokens > best->kv_capacity_tokens)))
      best = std::move(p);
  }
  best->max_context = max_context;
  best->max_batch = max_batch;
  return *best;
}

std::string gib(double bytes) { return fmt::format("{:.1f} GiB", bytes / kGiB); }

void add_warnings(const PlanInputs& in, Plan& p) {
  const ModelConfig& c = in.model.config;
  const DeviceProfile& chip = in.chip;
  auto warn = [&](std::string s) { p.warnings.push_back(std::move(s)); };
  const int tp = p.layout.tensor_parallel;
  if (in.model.fp8_weights && chip.fp8 != true)
    warn(
        fmt::format("FP8 weights on {}, which has {} FP8 support: the GEMM dequantizes each block as it reads it "
                    "(weights stay FP8 in memory; math at the BF16 rate)",
                    chip.id, chip.fp8 ? "no" : "unknown"));
  if (chip.policies.backend.empty())
    warn(fmt::format("no CAI backend plugin serves {} yet (policies.backend is empty)", chip.id));
  if (!chip.bandwidth_gbs) warn(fmt::format("{} has no bandwidth_gbs in its profile: decode tok/s unknown", chip.id));
  if (!chip.bf16_tflops && !chip.int8_tops)
    warn(fmt::format("{} has neither bf16_tflops nor int8_tops: no prefill estimate; decode counts memory traffic only",
                     chip.id));
  else if (!chip.bf16_tflops)
    warn("prefill and decode compute use int8_tops (the W8A8 path): the profile has no bf16_tflops");
  if (c.is_mla() && tp > 1)
    warn(
        fmt::format("MLA: each of the {} tensor-parallel cards keeps the whole latent KV ({} B/token); KV does not "
                    "shrink with TP",
                    tp, p.kv_bytes_per_token));
  if (!c.is_mla() && tp > c.num_key_value_heads)
    warn(fmt::format("{} tensor-parallel cards but {} KV heads: KV heads are replicated", tp, c.num_key_value_heads));
  if (c.num_attention_heads % tp)
    warn(fmt::format("{} attention heads do not split evenly over {} cards", c.num_attention_heads, tp));
  if (c.n_routed_experts > 0 && c.n_routed_experts % p.layout.expert_parallel)
    warn(fmt::format("{} routed experts do not split evenly over {} cards", c.n_routed_experts,
                     p.layout.expert_parallel));
  if (p.layout.cards_used < in.request.cards)
    warn(fmt::format("{} of {} cards unused: layouts use whole groups of {} cards",
                     in.request.cards - p.layout.cards_used, in.request.cards, tp));
  const bool several = tp > 1 || p.layout.expert_parallel > 1 || p.layout.stages.size() > 1;
  if (several && !chip.interconnect_gbs)
    warn(
        fmt::format("{} has no interconnect_gbs in its profile: the layout's collectives and stage transfers are not "
                    "in the decode and prefill numbers",
                    chip.id));
  if (p.layout.pipeline_parallel > 1)
    warn(fmt::format(
        "pipeline over {} stages: a sequence passes them in turn; aggregate tok/s assumes no micro-batching",
        p.layout.pipeline_parallel));
  if (in.request.ctx > c.max_position_embeddings)
    warn(fmt::format("context {} exceeds the model's max_position_embeddings {}", in.request.ctx,
                     c.max_position_embeddings));
  if (in.model.skipped_bytes > 0)
    warn(fmt::format("{} of checkpoint tensors the model does not read (e.g. MTP layers) are not counted",
                     gib(static_cast<double>(in.model.skipped_bytes))));
  if (p.kv_offload_layers > 0)
    warn(fmt::format(
        "KV of {} layers goes to host memory ({} over all cards), streamed each step over a {:.0f} GB/s link",
        p.kv_offload_layers, gib(static_cast<double>(p.kv_host_bytes)), kHostLinkGBs));
  if (!p.weights_fit)
    warn(fmt::format("weights + activations need {} per card, above the {} usable",
                     gib(double(p.weights_bytes_per_card + p.activation_bytes_per_card)),
                     gib(double(p.card_bytes - p.reserved_bytes_per_card))));
  if (!p.fits)
    warn(p.min_cards ? fmt::format("does not fit: this request needs at least {} cards", *p.min_cards)
                     : fmt::format("does not fit on up to {} cards", kMaxPlannedCards));
}

}  // namespace

std::string main_weight_type(const ModelFootprint& model) {
  std::string best;
  size_t most = 0;
  for (const auto& [name, bytes] : model.bytes_by_dtype)
    if (bytes > most) best = name, most = bytes;
  for (char& c : best) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return best;
}

PlanEfficiency plan_efficiency(const DeviceProfile& chip, const ModelFootprint& model, const PlanRequest& request) {
  PlanEfficiency e;
  e.weights = main_weight_type(model);
  if (request.assume_defaults) return e;
  const std::string& weights = e.weights;
  // The backend's entry for these weights (at these threads, for a CPU), else the one for the weight type nearest
  // in bits per weight: a backend's kernels for one quantized type tell more about a similar one than the defaults.
  auto bits = [](const std::string& name) {
    const std::optional<DType> t = dtype_from_name(name);
    if (!t) return 16.0;
    const DTypeInfo& i = dtype_info(*t);
    return 8.0 * static_cast<double>(i.block_bytes) / static_cast<double>(i.block_elems);
  };
  auto distance = [&](const MeasuredEfficiency& m) {
    return std::abs(bits(m.weights) - bits(weights)) + (m.weights == weights ? 0 : 0.5) +
           (m.threads == request.threads ? 0 : 0.25);
  };
  const MeasuredEfficiency* pick = nullptr;
  for (const MeasuredEfficiency& m : chip.measured_efficiency) {
    if (m.backend != chip.policies.backend) continue;
    if (m.threads != 0 && request.threads != 0 && m.threads != request.threads) continue;
    if (!pick || distance(m) < distance(*pick)) pick = &m;
  }
  if (!pick) return e;
  const std::string where =
      fmt::format("measured on {} {}{}{}: {}", pick->backend, pick->weights,
                  pick->threads ? fmt::format(" at {} threads", pick->threads) : "",
                  pick->weights == weights ? "" : fmt::format(", the nearest to {}", weights), pick->source);
  if (pick->decode) e.decode = *pick->decode, e.decode_source = where;
  if (pick->prefill) e.prefill = *pick->prefill, e.prefill_source = where;
  return e;
}

Result<Plan> make_plan(const ModelFootprint& model, const DeviceProfile& chip, const PlanRequest& request) {
  if (request.cards < 1 || request.cards > kMaxPlannedCards)
    return invalid_argument("--cards must be between 1 and {}, got {}", kMaxPlannedCards, request.cards);
  if (request.batch < 1) return invalid_argument("--batch must be at least 1, got {}", request.batch);
  if (request.step_tokens < 1) return invalid_argument("--step-tokens must be at least 1, got {}", request.step_tokens);
  if (request.ctx < 0) return invalid_argument("--ctx must be positive, got {}", request.ctx);
  const double memory_gib = request.memory_gib.value_or(chip.memory_gib.value_or(0));
  if (memory_gib <= 0)
    return invalid_argument("{}: the profile has no memory_gib; give the memory per card with --memory-gib", chip.id);
  std::string kv_name = request.kv_dtype;
  if (kv_name.empty()) kv_name = chip.policies.kv_dtype;
  if (kv_name.empty()) kv_name = chip.policies.backend == "cpu" ? "f32" : "bf16";
  CAI_ASSIGN_OR_RETURN(const DType kv_dtype, parse_kv_dtype(kv_name));
  PlanInputs in{model, chip, request, kv_dtype, chip.policies.host_offload_below, memory_gib};
  if (in.request.ctx == 0) in.request.ctx = model.config.max_position_embeddings;

  Plan p = best_layout(in, request.cards);
  p.kv_dtype = std::string(dtype_name(kv_dtype));
  p.weights_bytes = model.weight_bytes();
  p.kv_bytes_per_token = kv_spec_for(model.config, kv_dtype).bytes_per_token();
  p.active_params = detail::active_params(model);
  for (int n = 1; n <= kMaxPlannedCards; ++n)
    if (const Plan q = best_layout(in, n); q.fits && q.kv_offload_layers == 0) {
      p.min_cards = n;
      break;
    }
  p.efficiency = plan_efficiency(chip, model, request);
  detail::estimate_speed(in, p);
  add_warnings(in, p);
  return p;
}

}  // namespace cai::chips
