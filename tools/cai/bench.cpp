// `cai bench`: prompt-processing and generation tokens/s (like llama-bench), with the memory-bandwidth roofline ratio;
// with --batch B also the aggregate generation rate of B sequences decoded together, as serving runs them. As in
// llama-bench, generation is timed on its own sequence from an empty context (tgN), or after --depth context tokens.
// With --spec, what speculative decoding costs and gains instead (bench_spec.h).
#include <algorithm>
#include <chrono>
#include <iostream>
#include <map>
#include <numeric>
#include <thread>

#include "core/membw.h"
#include "core/seconds_since.h"
#include "core/profile.h"
#include "ops/device_bandwidth.h"
#include "runtime/sequence_batch.h"
#include "runtime/single_sequence.h"
#include "bench_profile.h"
#include "bench_spec.h"

namespace cai::cli {

std::vector<int32_t> bench_tokens(int n, int vocab) {
  std::vector<int32_t> t(static_cast<size_t>(n));
  for (size_t i = 0; i < t.size(); ++i) t[i] = static_cast<int32_t>((i * 7919 + 13) % static_cast<size_t>(vocab));
  return t;
}

namespace {

struct BenchOptions {
  CommonOptions common;
  int n_prompt = 128;
  int n_gen = 64;
  int depth = 0;
  int repeats = 3;
  int batch = 1;
  std::string text;  // --text: the prompt of --spec runs
  bool json = false;
  std::string save_profile;  // --save-profile FILE
};

// Aggregate generated tokens/s of `n_seqs` sequences decoding together after `context` (each its own copy; none when
// empty), in the serving engine's batch-invariant mode; the best of `repeats`.
Result<double> batched_tg(Model& model, const std::vector<int32_t>& context, const std::vector<int32_t>& prompt,
                          int n_seqs, int n_gen, int repeats) {
  std::vector<int32_t> contexts, step(static_cast<size_t>(n_seqs));
  for (int s = 0; s < n_seqs; ++s) contexts.insert(contexts.end(), context.begin(), context.end());
  for (hal::Device* d : model.devices()) d->set_batch_invariant(true);
  double best = 0;
  for (int r = 0; r < repeats; ++r) {
    const int n_ctx = static_cast<int>(context.size()) + n_gen + 1;
    CAI_ASSIGN_OR_RETURN(SequenceBatch b, SequenceBatch::create(model, n_seqs, n_ctx));
    if (!context.empty()) CAI_TRY(b.step(contexts, static_cast<int>(context.size()), false).status());
    auto t0 = std::chrono::steady_clock::now();
    for (int i = 0; i < n_gen; ++i) {
      for (int s = 0; s < n_seqs; ++s)
        step[static_cast<size_t>(s)] = prompt[static_cast<size_t>(i + s) % prompt.size()];
      CAI_TRY(b.step(step, 1, false).status());
    }
    best = std::max(best, n_gen > 0 ? n_seqs * n_gen / seconds_since(t0) : 0.0);
  }
  for (hal::Device* d : model.devices()) d->set_batch_invariant(false);
  return best;
}

// Bytes the model's communicator moved between devices so far, by collective (0 on one device).
std::map<std::string, uint64_t> bytes_moved(const Model& model) {
  std::map<std::string, uint64_t> out;
  const hal::Communicator* comm = model.communicator();
  for (int c = 0; c < static_cast<int>(hal::Collective::kCount); ++c) {
    const auto kind = static_cast<hal::Collective>(c);
    out[hal::collective_name(kind)] = comm ? comm->bytes_moved(kind) : 0;
  }
  return out;
}

double transfer_total(const std::map<std::string, double>& by_collective) {
  double n = 0;
  for (const auto& [name, bytes] : by_collective) n += bytes;
  return n;
}

struct GenerationRate {
  double tokens_per_s = 0;
  std::map<std::string, double> transfer_bytes_per_token;  // between the model's devices, by collective
};

// Tokens/s of n_gen single-token steps on a fresh sequence after `context` (llama-bench's tgN), and the bytes moved
// between devices per token; with `profiled`, the phase profile (core/profile.h) is reset and records those steps
// alone.
Result<GenerationRate> generation_rate(Model& model, const std::vector<int32_t>& context,
                                       const std::vector<int32_t>& prompt, int n_gen, bool profiled) {
  CAI_ASSIGN_OR_RETURN(SingleSequence seq, SingleSequence::create(model, static_cast<int>(context.size()) + n_gen + 1));
  if (!context.empty()) CAI_TRY(seq.step(context, false).status());
  profile::reset();
  profile::set_enabled(profiled);
  const std::map<std::string, uint64_t> moved0 = bytes_moved(model);
  const auto t0 = std::chrono::steady_clock::now();
  Status status;
  for (int i = 0; i < n_gen && status.ok(); ++i) {
    const int32_t t = prompt[static_cast<size_t>(i) % prompt.size()];
    status = seq.step(std::span<const int32_t>(&t, 1), false).status();
  }
  const double seconds = seconds_since(t0);
  profile::set_enabled(false);
  CAI_TRY(status);
  if (n_gen <= 0) return GenerationRate{};
  GenerationRate rate{n_gen / seconds, {}};
  for (const auto& [name, bytes] : bytes_moved(model))
    rate.transfer_bytes_per_token[name] = static_cast<double>(bytes - moved0.at(name)) / n_gen;
  return rate;
}

// The model's devices all compute at the call (the CPU): timed passes can record the phase profile themselves.
bool all_host_visible(const Model& model) {
  const std::vector<hal::Device*> devices = model.devices();
  return std::all_of(devices.begin(), devices.end(), [](const hal::Device* d) { return d->host_visible(); });
}

Status bench(const BenchOptions& o) {
  const int per_seq = std::max(o.n_prompt, o.depth + o.n_gen) + 1;
  CAI_ASSIGN_OR_RETURN(const SpecOptions spec, spec_options(o.common));
  CAI_ASSIGN_OR_RETURN(LoadedModel lm, open_model(o.common, int64_t{std::max(1, o.batch)} * per_seq));
  if (spec.method != SpecMethod::kOff) {
    CAI_ASSIGN_OR_RETURN(const LoadedModel draft, load_draft_model(o.common, lm));
    return bench_spec(
        lm, draft,
        {spec, std::max(1, o.batch), o.n_gen, o.n_prompt, std::max(1, o.repeats), o.text, o.common.precision, o.json});
  }
  Model& model = *lm.model;
  const int vocab = model.config().vocab_size;
  const std::vector<int32_t> prompt = bench_tokens(std::max(1, o.n_prompt), vocab),
                             context = bench_tokens(o.depth, vocab);
  double best_pp = 0, best_tg = 0;
  std::map<std::string, double> transfer_bytes_per_token;
  std::map<std::string, double> tg_phases;
  // The CPU's ops finish before they return, so the timed passes also give the phase shares; a device with its own
  // queue gets a pass of its own, synchronized at each phase boundary (profile::set_fence), so the rate stays unfenced.
  const bool profile_in_timed_pass = all_host_visible(model);
  for (int r = 0; r < std::max(1, o.repeats); ++r) {
    {
      CAI_ASSIGN_OR_RETURN(SingleSequence pp, SingleSequence::create(model, static_cast<int>(prompt.size()) + 1));
      const auto t0 = std::chrono::steady_clock::now();
      CAI_TRY(pp.step(prompt, false).status());
      best_pp = std::max(best_pp, static_cast<double>(prompt.size()) / seconds_since(t0));
    }
    CAI_ASSIGN_OR_RETURN(const GenerationRate tg,
                         generation_rate(model, context, prompt, o.n_gen, profile_in_timed_pass));
    transfer_bytes_per_token = tg.transfer_bytes_per_token;
    if (tg.tokens_per_s > best_tg) {
      best_tg = tg.tokens_per_s;
      tg_phases = profile::snapshot();
    }
  }
  if (!profile_in_timed_pass && o.n_gen > 0) {  // one more pass, fenced at every phase boundary, for the shares
    const std::vector<hal::Device*> devices = model.devices();
    profile::set_fence([&devices] {
      for (hal::Device* d : devices) (void)d->default_stream().synchronize();
    });
    const Result<GenerationRate> tg = generation_rate(model, context, prompt, o.n_gen, true);
    profile::set_fence(nullptr);
    CAI_TRY(tg.status());
    tg_phases = profile::snapshot();
  }
  double batch_tg = 0;
  if (o.batch > 1) {
    CAI_ASSIGN_OR_RETURN(batch_tg, batched_tg(model, context, prompt, o.batch, o.n_gen, std::max(1, o.repeats)));
  }
  const hal::OpContext ctx = model.device().op_context();
  double bw_gbps = 0;  // the roofline of the memory the weights live in: host RAM, or the device's own
  if (model.device().host_visible()) {
    bw_gbps = measure_read_bandwidth_gbps(ctx.pool);
  } else {
    CAI_ASSIGN_OR_RETURN(bw_gbps, ops::measure_device_bandwidth_gbps(model.device()));
  }
  const double bytes_per_token = static_cast<double>(model.weight_bytes_per_token());
  const double roofline_tg = bw_gbps * 1e9 / bytes_per_token;
  double phase_total = 0;
  for (const auto& [phase, sec] : tg_phases) phase_total += sec;
  nlohmann::json shares = nlohmann::json::object();
  for (const auto& [phase, sec] : tg_phases) shares[phase] = phase_total > 0 ? sec / phase_total : 0.0;
  nlohmann::json out = {{"model", o.common.model},
                        {"load_seconds", lm.load_seconds},
                        {"rss_after_load_bytes", lm.rss_after_load_bytes},
                        {"prewarm_seconds", lm.prewarm_seconds},
                        {"tg_time_share", shares},
                        {"device", model.device().description()},
                        {"devices", hal::device_names(model.devices())},
                        {"tg_transfer_bytes_per_token", transfer_total(transfer_bytes_per_token)},
                        {"tg_collective_bytes_per_token", transfer_bytes_per_token},
                        {"n_prompt", prompt.size()},
                        {"n_gen", o.n_gen},
                        {"depth", o.depth},
                        {"pp_tokens_per_s", best_pp},
                        {"tg_tokens_per_s", best_tg},
                        {"weight_bytes", model.weight_bytes()},
                        {"weight_bytes_per_token", model.weight_bytes_per_token()},
                        {"kv_dtype", dtype_name(model.kv_spec().dtype)},
                        {"kv_bytes_per_token", model.kv_spec().bytes_per_token()},
                        {"precision", o.common.precision},
                        {"mem_read_gbps", bw_gbps},
                        {"tg_roofline_tokens_per_s", roofline_tg},
                        {"tg_roofline_ratio", best_tg / roofline_tg}};
  if (o.batch > 1) {
    out["batch"] = o.batch;
    out["tg_batch_tokens_per_s"] = batch_tg;
    out["batch_speedup"] = best_tg > 0 ? batch_tg / best_tg : 0.0;
  }
  if (!o.save_profile.empty()) {
    const int threads = o.common.threads > 0 ? o.common.threads : static_cast<int>(std::thread::hardware_concurrency());
    const BenchMeasurement m{o.common.model,
                             o.common.profile,
                             model.device().host_visible(),
                             threads,
                             bw_gbps,
                             static_cast<int>(prompt.size()),
                             o.n_gen,
                             best_pp,
                             best_tg,
                             model.device().description()};
    CAI_TRY(save_measured_profile(m, o.save_profile));
  }
  if (o.json) {
    std::cout << out.dump() << "\n";
  } else {
    std::cout << fmt::format("load: {:.2f} s, RSS after load {:.1f} MiB ({:.1f} MiB of weights)\n", lm.load_seconds,
                             static_cast<double>(lm.rss_after_load_bytes) / (1 << 20),
                             static_cast<double>(model.weight_bytes()) / (1 << 20));
    const std::string tg = fmt::format("tg{}", o.n_gen) + (o.depth > 0 ? fmt::format(" @ d{}", o.depth) : "");
    std::cout << fmt::format("pp{}: {:.1f} tok/s   {}: {:.1f} tok/s   roofline {:.1f} tok/s at {:.1f} GB/s ({:.0f}%)\n",
                             prompt.size(), best_pp, tg, best_tg, roofline_tg, bw_gbps, 100 * best_tg / roofline_tg);
    for (const auto& [phase, share] : shares.items())
      std::cout << fmt::format("  {:<16} {:5.1f}%\n", phase, 100 * share.get<double>());
    if (model.communicator())
      std::cout << fmt::format(
          "devices {}: {:.0f} bytes moved between them per generated token ({:.0f} send_recv, "
          "{:.0f} all_reduce; time share: transfer)\n",
          hal::device_names(model.devices()), transfer_total(transfer_bytes_per_token),
          transfer_bytes_per_token["send_recv"], transfer_bytes_per_token["all_reduce"]);
    if (o.batch > 1)
      std::cout << fmt::format("{} x {} sequences: {:.1f} tok/s aggregate = {:.2f}x one sequence\n", tg, o.batch,
                               batch_tg, best_tg > 0 ? batch_tg / best_tg : 0.0);
  }
  return {};
}

}  // namespace

void register_bench(CLI::App& app, int& exit_code) {
  auto o = std::make_shared<BenchOptions>();
  CLI::App* cmd = app.add_subcommand("bench", "prompt and generation throughput with the memory-bandwidth roofline");
  add_common_options(*cmd, o->common);
  cmd->add_option("-p,--n-prompt", o->n_prompt, "prompt tokens")->check(CLI::PositiveNumber);
  cmd->add_option("-n,--n-gen", o->n_gen, "generated tokens, timed on a fresh sequence as llama-bench's tgN")
      ->check(CLI::NonNegativeNumber);
  cmd->add_option("-d,--depth", o->depth, "context tokens generation starts after (prefilled untimed)")
      ->check(CLI::NonNegativeNumber);
  cmd->add_option("-r,--repeats", o->repeats, "repetitions; the best is reported")->check(CLI::PositiveNumber);
  cmd->add_option("-b,--batch", o->batch, "also decode this many sequences together and report the aggregate rate")
      ->check(CLI::Range(1, 256));
  cmd->add_flag("--json", o->json, "print one JSON line");
  cmd->add_option("--save-profile", o->save_profile,
                  "write the chip's profile with this run's measured efficiency (for `cai plan --chip FILE`) to FILE; "
                  "a device run names its profile with --profile");
  add_spec_options(*cmd, o->common);
  cmd->add_option("--text", o->text,
                  "with --spec: the prompt as text (tokenized with the model's tokenizer) instead of -p synthetic "
                  "tokens");
  cmd->callback([o, &exit_code] {
    Status st = bench(*o);
    if (!st.ok()) exit_code = fail(st);
  });
}

}  // namespace cai::cli
