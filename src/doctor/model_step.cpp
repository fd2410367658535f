// The model steps: the reference DeepSeek-V3-architecture model on the device against the logits of DeepSeek's own
// inference code (tests/data/oracle/deepseek_v3_tiny/README.md says how they were made).
#include <algorithm>

#include "core/json_file.h"
#include "doctor/doctor.h"
#include "doctor/reference_logits.h"
#include "model/model_loader.h"
#include "runtime/sampler.h"
#include "runtime/single_sequence.h"

namespace cai::doctor {

namespace {

constexpr int kGreedy = 8;  // greedy tokens per prompt, one decode step each

// How far a prompt's logits were from the reference, or where they first went wrong.
struct PromptCheck {
  double worst = 0;      // the largest logit difference
  std::string mismatch;  // a logit beyond the tolerance or another greedy token, naming the prompt, row and token
};

// One prompt through the model: its logits, then kGreedy greedy tokens each from one decode step, against the
// reference.
Result<PromptCheck> check_prompt(Model& model, const nlohmann::json& p, const std::string& dir, double tol) {
  const std::string name = p.at("name").get<std::string>();
  const std::vector<int32_t> ids = p.at("input_ids").get<std::vector<int32_t>>();
  const std::vector<int32_t> want_tokens = p.at("greedy_next_tokens").get<std::vector<int32_t>>();
  const size_t vocab = static_cast<size_t>(model.config().vocab_size);
  CAI_ASSIGN_OR_RETURN(const std::vector<float> want_prompt,
                       read_reference_logits(dir + "/" + p.at("logits_file").get<std::string>(), ids.size(), vocab));
  CAI_ASSIGN_OR_RETURN(
      const std::vector<float> want_gen,
      read_reference_logits(dir + "/" + p.at("gen_logits_file").get<std::string>(), want_tokens.size(), vocab));
  CAI_ASSIGN_OR_RETURN(SingleSequence seq, SingleSequence::create(model, static_cast<int>(ids.size()) + kGreedy + 1));
  CAI_ASSIGN_OR_RETURN(std::vector<float> logits, seq.step(ids, /*all_logits=*/true));
  LogitDiff d = max_diff(logits, want_prompt);
  PromptCheck c{d.max, ""};
  if (d.max > tol) {
    c.mismatch = fmt::format(
        "{}: the logit of id {} at prompt token {} is {} where the reference has {} (|Δ| {:.3g} > "
        "{:.3g})",
        name, d.at % vocab, d.at / vocab, logits[d.at], want_prompt[d.at], d.max, tol);
    return c;
  }
  std::vector<float> last(logits.end() - static_cast<ptrdiff_t>(vocab), logits.end());
  for (size_t i = 0; i < want_tokens.size(); ++i) {
    const std::vector<float> want(want_gen.begin() + static_cast<ptrdiff_t>(i * vocab),
                                  want_gen.begin() + static_cast<ptrdiff_t>((i + 1) * vocab));
    d = max_diff(last, want);
    c.worst = std::max(c.worst, d.max);
    if (d.max > tol) {
      c.mismatch = fmt::format(
          "{}: at greedy step {} the logit of id {} is {} where the reference has {} (|Δ| {:.3g} > "
          "{:.3g})",
          name, i, d.at, last[d.at], want[d.at], d.max, tol);
      return c;
    }
    const int32_t next = argmax(last);
    if (next != want_tokens[i]) {
      c.mismatch = fmt::format("{}: greedy token {} is {} where the reference has {}", name, i, next, want_tokens[i]);
      return c;
    }
    if (i + 1 < want_tokens.size()) {
      CAI_ASSIGN_OR_RETURN(last, seq.step(std::span<const int32_t>(&next, 1), false));
    }
  }
  return c;
}

// The step's detail; ok = false with the first mismatch.
Result<StepResult> run_model(hal::Device& device, const std::string& dir, const CheckOptions& options) {
  CAI_ASSIGN_OR_RETURN(const nlohmann::json spec, read_json_file(dir + "/tokens.json"));
  const nlohmann::json& prompts = spec.at("prompts");
  int64_t longest = 0;
  for (const auto& p : prompts) longest = std::max<int64_t>(longest, static_cast<int64_t>(p.at("input_ids").size()));
  device.set_precision(hal::Precision::kExact);
  device.set_batch_invariant(false);
  LoadOptions load;
  load.kv_dtype = DType::kF32;
  load.kv_tokens = longest + kGreedy + 1;
  CAI_ASSIGN_OR_RETURN(LoadedModel lm, load_model(dir, device, load));
  double worst = 0;
  for (const auto& p : prompts) {
    CAI_ASSIGN_OR_RETURN(const PromptCheck c, check_prompt(*lm.model, p, dir, options.logit_tolerance));
    if (!c.mismatch.empty()) return StepResult{"", false, c.mismatch};
    worst = std::max(worst, c.worst);
  }
  const ModelConfig& cfg = lm.model->config();
  return StepResult{
      "", true,
      fmt::format("{} layers ({} MoE, {} routed experts, MLA): {} prompts of up to {} tokens and {} greedy tokens "
                  "each; max |Δlogit| {:.2g} (allowed {:.0e}), every greedy token the reference's",
                  cfg.num_hidden_layers, cfg.num_hidden_layers - cfg.first_k_dense_replace, cfg.n_routed_experts,
                  prompts.size(), longest, kGreedy, worst, options.logit_tolerance)};
}

}  // namespace

StepResult check_model(hal::Device& device, const std::string& variant, const CheckOptions& options) {
  const std::string dir = variant == "bf16" ? options.reference_dir : options.reference_dir + "/" + variant;
  Result<StepResult> r = [&]() -> Result<StepResult> {
    try {
      return run_model(device, dir, options);
    } catch (const nlohmann::json::exception& e) {  // a reference tokens.json without the fields it needs
      return corrupt("{}/tokens.json: {}", dir, e.what());
    }
  }();
  StepResult out = r.ok() ? *r : StepResult{"", false, r.status().to_string()};
  out.step = "model_" + variant;
  return out;
}

}  // namespace cai::doctor
