// `cai eval`: run given token ids as one prompt (F32 activations), dump logits (and the MTP module's), then decode
// greedily with the KV cache, token by token or with speculative decoding (--spec).
#include <algorithm>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <sstream>

#include "hal/remote_device.h"
#include "runtime/sampler.h"
#include "runtime/single_sequence.h"
#include "runtime/spec/spec_decode.h"
#include "runtime/step_rows.h"
#include "verbs.h"

namespace cai::cli {

namespace {

struct EvalOptions {
  CommonOptions common;
  std::string tokens;
  std::string logits_path;
  std::string gen_logits_path;
  std::string mtp_logits_path;
  int greedy = 0;
  bool json = false;
};

Result<std::vector<int32_t>> parse_tokens(const std::string& s, int n_vocab) {
  std::vector<int32_t> ids;
  std::stringstream ss(s);
  std::string item;
  while (std::getline(ss, item, ',')) {
    char* end = nullptr;
    long v = std::strtol(item.c_str(), &end, 10);
    if (item.empty() || *end != '\0') return invalid_argument("--tokens: '{}' is not an integer", item);
    if (v < 0 || v >= n_vocab) return invalid_argument("--tokens: id {} is outside the vocabulary of {}", v, n_vocab);
    ids.push_back(static_cast<int32_t>(v));
  }
  if (ids.empty()) return invalid_argument("--tokens: no token ids given");
  return ids;
}

Status write_f32(const std::string& path, const std::vector<float>& v) {
  std::ofstream out(path, std::ios::binary);
  out.write(reinterpret_cast<const char*>(v.data()), static_cast<std::streamsize>(v.size() * sizeof(float)));
  if (!out) return io_error("cannot write {}", path);
  return {};
}

// The MTP module's logits over the prompt, [n-1, vocab]: row i from token i+1 and the main hidden state at i.
Result<std::vector<float>> mtp_logits(Model& model, const std::vector<int32_t>& ids, const std::vector<float>& hidden) {
  MtpModule* mtp = model.mtp();
  if (!mtp) return unsupported("--mtp-logits: the model has no multi-token-prediction module");
  const int n = static_cast<int>(ids.size()) - 1;
  if (n == 0) return std::vector<float>{};
  constexpr int kBlock = 16;
  const int n_blocks = (n + kBlock - 1) / kBlock;
  CAI_ASSIGN_OR_RETURN(KvCache kv, KvCache::create(mtp->mtp_kv_shards(), mtp->mtp_kv_spec(), n_blocks, kBlock));
  const std::vector<int32_t> table = identity_block_table(n_blocks);
  StepBatch b;
  append_sequence(b, std::span(ids).subspan(1), 0, table, kBlock);
  for (int i = 0; i < n; ++i) b.logit_rows.push_back(i);
  std::vector<float> logits(static_cast<size_t>(n) * static_cast<size_t>(model.config().vocab_size));
  CAI_TRY(mtp->forward_mtp(b, hidden.data(), kv, logits.data(), nullptr));
  return logits;
}

// Greedy tokens one step at a time, and the logits that chose each.
Status greedy_steps(SingleSequence& seq, std::vector<float> last, int n, std::vector<int32_t>& greedy,
                    std::vector<float>& gen_logits) {
  for (int i = 0; i < n; ++i) {
    gen_logits.insert(gen_logits.end(), last.begin(), last.end());
    const int32_t next = argmax(last);
    greedy.push_back(next);
    if (i + 1 < n) {
      CAI_ASSIGN_OR_RETURN(last, seq.step(std::span<const int32_t>(&next, 1), false));
    }
  }
  return {};
}

Status eval(const EvalOptions& o) {
  const int64_t n_ids = std::count(o.tokens.begin(), o.tokens.end(), ',') + 1;
  CAI_ASSIGN_OR_RETURN(const SpecOptions spec, spec_options(o.common));
  if (spec.method != SpecMethod::kOff && !o.gen_logits_path.empty())
    return invalid_argument("--gen-logits records one-token steps: it does not go with --spec");
  CAI_ASSIGN_OR_RETURN(LoadedModel lm, open_model(o.common, n_ids + o.greedy + 1));
  const ModelConfig& cfg = lm.model->config();
  CAI_ASSIGN_OR_RETURN(std::vector<int32_t> ids, parse_tokens(o.tokens, cfg.vocab_size));
  const int n_ctx = static_cast<int>(ids.size()) + o.greedy + 1;
  CAI_ASSIGN_OR_RETURN(SingleSequence seq, SingleSequence::create(*lm.model, n_ctx));
  std::vector<float> hidden;
  CAI_ASSIGN_OR_RETURN(std::vector<float> logits,
                       seq.step(ids, /*all_logits=*/true, o.mtp_logits_path.empty() ? nullptr : &hidden));
  if (!o.logits_path.empty()) CAI_TRY(write_f32(o.logits_path, logits));
  if (!o.mtp_logits_path.empty()) {
    CAI_ASSIGN_OR_RETURN(const std::vector<float> mtp, mtp_logits(*lm.model, ids, hidden));
    CAI_TRY(write_f32(o.mtp_logits_path, mtp));
  }
  const size_t vocab = static_cast<size_t>(cfg.vocab_size);
  std::vector<int32_t> greedy;
  std::vector<float> gen_logits;
  nlohmann::json spec_json;
  if (spec.method == SpecMethod::kOff) {
    CAI_TRY(
        greedy_steps(seq, {logits.end() - static_cast<ptrdiff_t>(vocab), logits.end()}, o.greedy, greedy, gen_logits));
  } else if (o.greedy > 0) {
    CAI_ASSIGN_OR_RETURN(const LoadedModel draft, load_draft_model(o.common, lm));
    CAI_ASSIGN_OR_RETURN(const SpecRun run, speculative_greedy(*lm.model, spec, {ids}, o.greedy, draft.model.get()));
    greedy = run.generated.front();
    spec_json = {{"method", spec_method_name(spec.method)},
                 {"tokens", spec.tokens},
                 {"steps", run.steps},
                 {"drafted", run.drafted},
                 {"accepted", run.accepted}};
  }
  if (!o.gen_logits_path.empty()) CAI_TRY(write_f32(o.gen_logits_path, gen_logits));
  // Each device's share while the sequence's KV cache is allocated: its weights, and the memory in use on it (devices
  // with memory of their own; the CPU reports what the host has).
  nlohmann::json devices = nlohmann::json::array();
  for (const hal::Device* d : lm.model->devices()) {
    const hal::MemoryInfo mem = d->memory_info();
    nlohmann::json entry = {{"name", d->name()}, {"weight_bytes", lm.model->weight_bytes_on(*d)}};
    // Memory in use is measured where the device is: not for another rank's (an MPI job's stand-in).
    if (!d->host_visible() && !hal::is_remote(*d) && mem.total_bytes > 0)
      entry["memory_used_bytes"] = mem.total_bytes - mem.free_bytes;
    devices.push_back(entry);
  }
  nlohmann::json out = {{"greedy", greedy},
                        {"n_vocab", cfg.vocab_size},
                        {"n_tokens", ids.size()},
                        {"architecture", cfg.architecture},
                        {"kv_dtype", dtype_name(lm.model->kv_spec().dtype)},
                        {"kv_bytes_per_token", lm.model->kv_spec().bytes_per_token()},
                        {"devices", devices},
                        {"load_seconds", lm.load_seconds},
                        {"prewarm_seconds", lm.prewarm_seconds}};
  if (!spec_json.is_null()) out["spec"] = spec_json;
  if (o.json) {
    std::cout << out.dump() << "\n";
  } else {
    std::cout << "greedy:";
    for (int32_t t : greedy) std::cout << " " << t;
    std::cout << "\n";
  }
  return {};
}

}  // namespace

void register_eval(CLI::App& app, int& exit_code) {
  auto o = std::make_shared<EvalOptions>();
  CLI::App* cmd = app.add_subcommand("eval", "logits of a token prompt and greedy continuation (for tests)");
  o->common.precision = "exact";  // the reference path the oracles check, unless asked otherwise
  add_common_options(*cmd, o->common);
  cmd->add_option("--tokens", o->tokens, "comma-separated token ids, e.g. 0,5,7")->required();
  cmd->add_option("--logits", o->logits_path, "write prompt logits here: float32 LE [n_tokens, vocab]");
  cmd->add_option("--gen-logits", o->gen_logits_path, "write the logits that chose each greedy token: [greedy, vocab]");
  cmd->add_option("--mtp-logits", o->mtp_logits_path,
                  "write the MTP module's prompt logits: float32 LE [n_tokens - 1, vocab], row i from token i+1 and "
                  "the main model's final-norm hidden state at i (DeepSeek-V3/R1 files that keep the module)")
      ->each([o](const std::string&) { o->common.load_mtp = true; });
  cmd->add_option("--greedy", o->greedy, "greedy tokens to decode (one step at a time, or verified drafts with --spec)")
      ->check(CLI::NonNegativeNumber);
  add_spec_options(*cmd, o->common);
  cmd->add_flag("--json", o->json, "print a JSON summary line");
  cmd->callback([o, &exit_code] {
    Status st = eval(*o);
    if (!st.ok()) exit_code = fail(st);
  });
}

}  // namespace cai::cli
