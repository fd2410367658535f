// `cai bench --spec`: verification cost by positions per sequence, then greedy decoding with and without drafts.
#include "bench_spec.h"

#include <algorithm>
#include <chrono>
#include <iostream>
#include <map>

#include "core/profile.h"
#include "core/seconds_since.h"
#include "runtime/sequence_batch.h"
#include "runtime/spec/spec_decode.h"

namespace cai::cli {

namespace {

constexpr int kTimedSteps = 16;  // verification steps timed per measurement
constexpr int kContext = 64;     // tokens each sequence holds before the timed steps

struct StepCost {
  double seconds = 0;                    // the best of the repeats
  std::map<std::string, double> phases;  // seconds per step by phase (core/profile.h), host-computing devices only
};

// One step computing `n` positions for each of `batch` sequences after kContext tokens, in the serving engine's
// batch-invariant mode: the best of `repeats`, and where the devices compute at the call (the CPU) its phases.
Result<StepCost> step_cost(Model& model, int batch, int n, int repeats) {
  const int vocab = model.config().vocab_size;
  const std::vector<int32_t> context = bench_tokens(batch * kContext, vocab);
  std::vector<int32_t> step(static_cast<size_t>(batch * n));
  for (size_t i = 0; i < step.size(); ++i) step[i] = static_cast<int32_t>((i * 104729 + 7) % vocab);
  const std::vector<hal::Device*> devices = model.devices();
  const bool profiled =
      std::all_of(devices.begin(), devices.end(), [](const hal::Device* d) { return d->host_visible(); });
  for (hal::Device* d : devices) d->set_batch_invariant(true);
  StepCost best{1e30, {}};
  for (int r = 0; r < repeats; ++r) {
    CAI_ASSIGN_OR_RETURN(SequenceBatch b, SequenceBatch::create(model, batch, kContext + (kTimedSteps + 1) * n + 1));
    CAI_TRY(b.step(context, kContext, false).status());
    CAI_TRY(b.step(step, n, true).status());  // untimed: the first pass over the weights pays for page faults
    profile::reset();
    profile::set_enabled(profiled);
    const auto t0 = std::chrono::steady_clock::now();
    Status st;
    for (int s = 0; s < kTimedSteps && st.ok(); ++s) st = b.step(step, n, true).status();
    const double seconds = seconds_since(t0) / kTimedSteps;
    profile::set_enabled(false);
    CAI_TRY(st);
    if (seconds >= best.seconds) continue;
    best.seconds = seconds;
    best.phases = profile::snapshot();
    for (auto& [phase, s] : best.phases) s /= kTimedSteps;
  }
  for (hal::Device* d : devices) d->set_batch_invariant(false);
  return best;
}

// The cost of a step of `rows` positions per sequence (fractional: the mean over a run), interpolated between the
// measured whole numbers of positions.
double cost_at(const std::map<int, double>& cost, double rows) {
  auto hi = cost.lower_bound(static_cast<int>(std::ceil(rows)));
  if (hi == cost.end()) return cost.rbegin()->second;
  if (hi == cost.begin()) return hi->second;
  const auto lo = std::prev(hi);
  const double t = (rows - lo->first) / (hi->first - lo->first);
  return lo->second + t * (hi->second - lo->second);
}

struct DecodeRate {
  double tokens_per_s = 0;
  SpecRun run;
};

// The best of `repeats` greedy runs: decode tokens/s over every sequence (the prompts' step excluded).
Result<DecodeRate> decode_rate(Model& model, const SpecOptions& spec, const std::vector<std::vector<int32_t>>& prompts,
                               int n_gen, int repeats, Model* draft) {
  DecodeRate best;
  for (int r = 0; r < repeats; ++r) {
    CAI_ASSIGN_OR_RETURN(SpecRun run, speculative_greedy(model, spec, prompts, n_gen, draft));
    const double rate = static_cast<double>(prompts.size() * static_cast<size_t>(n_gen - 1)) / run.decode_seconds;
    if (rate > best.tokens_per_s) best = {rate, std::move(run)};
  }
  return best;
}

}  // namespace

Status bench_spec(const LoadedModel& lm, const LoadedModel& draft, const SpecBenchOptions& o) {
  Model& model = *lm.model;
  if (o.n_gen < 2) return invalid_argument("--spec: -n must be at least 2 (one token comes from the prompt's step)");
  const int vocab = model.config().vocab_size;
  std::vector<std::vector<int32_t>> prompts;
  for (int s = 0; s < o.batch; ++s) {
    std::vector<int32_t> p;
    if (!o.text.empty()) {
      if (!lm.tokenizer) return invalid_argument("--text: the model has no tokenizer");
      p = lm.tokenizer->encode(o.text, lm.tokenizer->add_bos_default(), true);
    } else {
      for (int i = 0; i < o.n_prompt; ++i) p.push_back(static_cast<int32_t>((i * 7919 + s * 131 + 13) % vocab));
    }
    prompts.push_back(std::move(p));
  }
  std::map<int, double> cost;
  nlohmann::json phases = nlohmann::json::object();
  for (int n : {1, 2, 4, o.spec.tokens + 1}) {
    if (cost.count(n)) continue;
    CAI_ASSIGN_OR_RETURN(const StepCost c, step_cost(model, o.batch, n, o.repeats));
    cost[n] = c.seconds;
    phases[std::to_string(n)] = c.phases;
  }
  SpecOptions off = o.spec;
  off.method = SpecMethod::kOff;
  CAI_ASSIGN_OR_RETURN(const DecodeRate base, decode_rate(model, off, prompts, o.n_gen, o.repeats, nullptr));
  CAI_ASSIGN_OR_RETURN(const DecodeRate spec,
                       decode_rate(model, o.spec, prompts, o.n_gen, o.repeats, draft.model.get()));
  const SpecRun& r = spec.run;
  const double acceptance = r.drafted > 0 ? static_cast<double>(r.accepted) / static_cast<double>(r.drafted) : 0;
  const double seq_steps = static_cast<double>(std::max<int64_t>(1, r.seq_steps));
  const double tokens_per_step = static_cast<double>(prompts.size() * static_cast<size_t>(o.n_gen - 1)) / seq_steps;
  const double rows_per_step = 1 + static_cast<double>(r.drafted) / seq_steps;
  // A step costs the verification of its positions plus what the drafter spent on it (MTP module, draft model).
  const double draft_per_step = r.draft_seconds / std::max(1, r.steps);
  const double predicted = tokens_per_step * cost.at(1) / (cost_at(cost, rows_per_step) + draft_per_step);
  const double measured = spec.tokens_per_s / base.tokens_per_s;
  std::vector<double> by_position;  // acceptance of the j-th draft token where one was verified
  for (size_t j = 0; j < r.drafted_at.size(); ++j)
    by_position.push_back(r.drafted_at[j] ? static_cast<double>(r.accepted_at[j]) / r.drafted_at[j] : 0.0);
  nlohmann::json ratio = nlohmann::json::object(), seconds = nlohmann::json::object();
  for (const auto& [n, s] : cost) seconds[std::to_string(n)] = s, ratio[std::to_string(n)] = s / cost.at(1);
  const nlohmann::json out = {{"model", lm.source},
                              {"spec", spec_method_name(o.spec.method)},
                              {"spec_tokens", o.spec.tokens},
                              {"batch", o.batch},
                              {"n_prompt", prompts.front().size()},
                              {"n_gen", o.n_gen},
                              {"precision", o.precision},
                              {"step_seconds", seconds},
                              {"step_cost_ratio", ratio},
                              {"step_phase_seconds", phases},
                              {"drafted", r.drafted},
                              {"accepted", r.accepted},
                              {"acceptance", acceptance},
                              {"acceptance_by_position", by_position},
                              {"tokens_per_step", tokens_per_step},
                              {"rows_per_step", rows_per_step},
                              {"draft_seconds_per_step", draft_per_step},
                              {"baseline_tokens_per_s", base.tokens_per_s},
                              {"spec_tokens_per_s", spec.tokens_per_s},
                              {"speedup", measured},
                              {"predicted_speedup", predicted},
                              {"prediction_ratio", measured / predicted}};
  if (o.json) {
    std::cout << out.dump() << "\n";
    return {};
  }
  std::cout << fmt::format("verification cost at batch {} (a step of n positions per sequence / one of 1):\n", o.batch);
  for (const auto& [n, s] : cost) {
    std::string by_phase;
    for (const auto& [phase, sec] : phases[std::to_string(n)].items())
      by_phase += fmt::format(" {} {:.2f}", phase, 1e3 * sec.get<double>());
    std::cout << fmt::format("  n={:<2} {:8.3f} ms  {:.2f}x  ms by phase:{}\n", n, 1e3 * s, s / cost.at(1), by_phase);
  }
  std::cout << fmt::format(
      "--spec {} K={}: {} of {} drafts accepted ({:.1f}%), {:.2f} tokens per step over {:.2f} "
      "positions, {:.3f} ms drafting per step\n",
      spec_method_name(o.spec.method), o.spec.tokens, r.accepted, r.drafted, 100 * acceptance, tokens_per_step,
      rows_per_step, 1e3 * draft_per_step);
  std::string positions;
  for (size_t j = 0; j < by_position.size(); ++j) positions += fmt::format(" {}: {:.0f}%", j + 1, 100 * by_position[j]);
  std::cout << "acceptance by draft position:" << positions << "\n";
  std::cout << fmt::format(
      "decode: {:.1f} tok/s without, {:.1f} tok/s with = {:.2f}x (predicted {:.2f}x from "
      "acceptance and cost; measured/predicted {:.2f})\n",
      base.tokens_per_s, spec.tokens_per_s, measured, predicted, measured / predicted);
  return {};
}

}  // namespace cai::cli
