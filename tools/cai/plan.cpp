// `cai plan`: will MODEL fit on N cards of a chip, in what layout, with how much context and batch, how fast.
#include <fmt/format.h>

#include <cstdio>
#include <thread>

#include "chip_profiles.h"
#include "chips/planner.h"
#include "verbs.h"

namespace cai::cli {

namespace {

struct PlanOptions {
  std::string model;
  std::string chip;
  chips::PlanRequest request;
  bool json = false;
  int threads = 0;  // --chip host or a CPU profile file: the threads the speeds are for
};

std::string gib(double bytes) { return fmt::format("{:.1f} GiB", bytes / (1024.0 * 1024.0 * 1024.0)); }
std::string opt_num(const std::optional<double>& v, const char* unit) {
  return v ? fmt::format("{:g} {}", *v, unit) : fmt::format("? {}", unit);
}

void print_table(const chips::Plan& p, const chips::ModelFootprint& m, const chips::DeviceProfile& chip) {
  const ModelConfig& c = m.config;
  std::string dtypes;
  for (const auto& [name, bytes] : m.bytes_by_dtype)
    dtypes += fmt::format("{}{} {}", dtypes.empty() ? "" : ", ", name, gib(double(bytes)));
  fmt::print("model    {} ({}, {} layers, {:.2f}B params, {:.2f}B read per token; {})\n", m.source, c.architecture,
             c.num_hidden_layers, double(m.params()) / 1e9, double(p.active_params) / 1e9, dtypes);
  fmt::print("chip     {} ({}) x {}: {:.1f} GiB, {}, {}, FP8 {}\n", chip.id, chip.name, p.request.cards,
             double(p.card_bytes) / (1024.0 * 1024.0 * 1024.0), opt_num(chip.bandwidth_gbs, "GB/s"),
             opt_num(chip.bf16_tflops, "BF16 TFLOPS"), chip.fp8 ? (*chip.fp8 ? "yes" : "no") : "unknown");
  fmt::print("request  context {}, batch {}, KV cache {}\n\n", p.request.ctx, p.request.batch, p.kv_dtype);
  const chips::PlanLayout& l = p.layout;
  auto row = [](const char* k, const std::string& v) { fmt::print("  {:<26}{}\n", k, v); };
  row("fits", fmt::format("{}{}", p.fits ? "yes" : "NO",
                          p.min_cards ? fmt::format(" (fewest cards without KV offload: {})", *p.min_cards)
                                      : " (not on any count)"));
  row("layout", fmt::format("TP {} x EP {}, {} pipeline stage(s), {} replica(s), {} card(s) used", l.tensor_parallel,
                            l.expert_parallel, l.pipeline_parallel, l.data_parallel, l.cards_used));
  row("weights",
      fmt::format("{} total, {} per card", gib(double(p.weights_bytes)), gib(double(p.weights_bytes_per_card))));
  row("KV per token", fmt::format("{} B ({} B per card)", p.kv_bytes_per_token, p.kv_bytes_per_token_per_card));
  row("activations per card", gib(double(p.activation_bytes_per_card)));
  row("runtime reserve per card",
      fmt::format("{} of {}", gib(double(p.reserved_bytes_per_card)), gib(double(p.card_bytes))));
  row("KV capacity", fmt::format("{} tokens per replica", p.kv_capacity_tokens));
  row("max context", fmt::format("{} (at batch {}, best layout)", p.max_context, p.request.batch));
  row("max batch", fmt::format("{} (at context {}, best layout)", p.max_batch, p.request.ctx));
  row("KV offload layers",
      fmt::format("{}{}", p.kv_offload_layers,
                  p.kv_offload_layers ? fmt::format(" ({} in host memory)", gib(double(p.kv_host_bytes))) : ""));
  const std::string decode_comm =
      p.decode_comm_ms ? fmt::format(", {:.2f} ms of it communication", *p.decode_comm_ms) : "";
  const std::string prefill_comm =
      p.prefill_comm_seconds ? fmt::format(", {:.2f} s of it communication", *p.prefill_comm_seconds) : "";
  row("decode", p.decode_tok_s_per_sequence
                    ? fmt::format("{:.1f} tok/s per sequence, {:.1f} tok/s aggregate ({}-bound, {:.2f} ms/step{})",
                                  *p.decode_tok_s_per_sequence, *p.decode_tok_s_aggregate, p.decode_bound,
                                  *p.decode_step_ms, decode_comm)
                    : std::string("unknown (no bandwidth in the profile)"));
  row("prefill", p.prefill_tok_s ? fmt::format("{:.0f} tok/s ({:.1f} s for a {}-token prompt{})", *p.prefill_tok_s,
                                               *p.prefill_seconds, p.request.ctx, prefill_comm)
                                 : std::string("unknown (no bf16_tflops / int8_tops in the profile)"));
  fmt::print(
      "\nassumptions: {:.0f}% of peak bandwidth ({}), {:.0f}% of peak math ({}), {:.0f}% of card memory reserved for "
      "the runtime, activations for {} tokens per step, {:.0f}% of the interconnect and {:.0f} us per collective\n",
      p.efficiency.decode * 100, p.efficiency.decode_source, p.efficiency.prefill * 100, p.efficiency.prefill_source,
      chips::kRuntimeReserve * 100, p.request.step_tokens, chips::kLinkEfficiency * 100, chips::kCollectiveLatencyUs);
  if (!p.warnings.empty()) fmt::print("warnings:\n");
  for (const std::string& w : p.warnings) fmt::print("  - {}\n", w);
}

int run_plan(const PlanOptions& o) {
  Result<chips::ModelFootprint> model = chips::load_footprint(o.model);
  if (!model.ok()) return fail(model.status());
  Result<chips::DeviceProfile> chip = o.chip == "host" ? host_chip(o.threads) : resolve_chip(o.chip);
  // A CPU profile file (cai bench --save-profile) describes this host: its memory and bandwidth are measured now.
  if (chip.ok() && o.chip != "host" && chip->policies.backend == "cpu" && o.chip.ends_with(".json"))
    chip = host_chip(o.threads, *chip);
  if (!chip.ok()) return fail(chip.status());
  chips::PlanRequest request = o.request;
  if (chip->policies.backend == "cpu")
    request.threads = o.threads > 0 ? o.threads : static_cast<int>(std::thread::hardware_concurrency());
  Result<chips::Plan> plan = chips::make_plan(*model, *chip, request);
  if (!plan.ok()) return fail(plan.status());
  if (o.json) {
    std::printf("%s\n", chips::plan_to_json(*plan, *model, *chip).dump(2).c_str());
  } else {
    print_table(*plan, *model, *chip);
  }
  return 0;
}

}  // namespace

void register_plan(CLI::App& app, int& exit_code) {
  auto o = std::make_shared<PlanOptions>();
  CLI::App* cmd = app.add_subcommand("plan", "plan a deployment: memory per card, layout, max context/batch, tok/s");
  cmd->add_option("-m,--model", o->model, "a .gguf file, a Hugging Face directory, a config.json, or preset:NAME")
      ->required();
  cmd->add_option("--chip", o->chip,
                  "device profile id (data/chips/<id>.json), a unique part of it, or a profile file (.json); host: "
                  "this machine's CPU, with its memory and a read bandwidth measured now")
      ->required();
  cmd->add_option("-t,--threads", o->threads,
                  "--chip host: the threads the speeds are for (the bandwidth probe's, the measured efficiency's; "
                  "0 = all)")
      ->capture_default_str();
  cmd->add_option("--cards", o->request.cards, "number of cards")->required();
  cmd->add_option("--ctx", o->request.ctx, "context length per sequence (default: the model's maximum)");
  cmd->add_option("--batch", o->request.batch, "concurrent sequences")->capture_default_str();
  cmd->add_option("--kv-dtype", o->request.kv_dtype, "KV cache type: f32, bf16, f16 or q8_0 (default: the profile's)");
  cmd->add_option("--memory-gib", o->request.memory_gib, "memory per card in GiB (default: the profile's)");
  cmd->add_option("--step-tokens", o->request.step_tokens, "tokens per engine step (cai serve --max-tokens-per-step)")
      ->capture_default_str();
  cmd->add_flag("--json", o->json, "print the plan as JSON");
  cmd->callback([o, &exit_code] { exit_code = run_plan(*o); });
}

}  // namespace cai::cli
