// `cai eval`: run given token ids as one prompt (F32 activations), dump logits, then decode greedily with the KV cache.
#include <algorithm>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <sstream>

#include "hal/remote_device.h"
#include "runtime/sampler.h"
#include "runtime/single_sequence.h"
#include "verbs.h"

namespace cai::cli {

namespace {

struct EvalOptions {
  CommonOptions common;
  std::string tokens;
  std::string logits_path;
  std::string gen_logits_path;
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

Status eval(const EvalOptions& o) {
  const int64_t n_ids = std::count(o.tokens.begin(), o.tokens.end(), ',') + 1;
  CAI_ASSIGN_OR_RETURN(LoadedModel lm, open_model(o.common, n_ids + o.greedy + 1));
  const ModelConfig& cfg = lm.model->config();
  CAI_ASSIGN_OR_RETURN(std::vector<int32_t> ids, parse_tokens(o.tokens, cfg.vocab_size));
  const int n_ctx = static_cast<int>(ids.size()) + o.greedy + 1;
  CAI_ASSIGN_OR_RETURN(SingleSequence seq, SingleSequence::create(*lm.model, n_ctx));
  CAI_ASSIGN_OR_RETURN(std::vector<float> logits, seq.step(ids, /*all_logits=*/true));
  if (!o.logits_path.empty()) CAI_TRY(write_f32(o.logits_path, logits));
  const size_t vocab = static_cast<size_t>(cfg.vocab_size);
  std::vector<float> last(logits.end() - static_cast<ptrdiff_t>(vocab), logits.end());
  std::vector<int32_t> greedy;
  std::vector<float> gen_logits;
  for (int i = 0; i < o.greedy; ++i) {
    gen_logits.insert(gen_logits.end(), last.begin(), last.end());
    const int32_t next = argmax(last);
    greedy.push_back(next);
    if (i + 1 < o.greedy) {
      CAI_ASSIGN_OR_RETURN(last, seq.step(std::span<const int32_t>(&next, 1), false));
    }
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
  cmd->add_option("--greedy", o->greedy, "greedy tokens to decode one step at a time")->check(CLI::NonNegativeNumber);
  cmd->add_flag("--json", o->json, "print a JSON summary line");
  cmd->callback([o, &exit_code] {
    Status st = eval(*o);
    if (!st.ok()) exit_code = fail(st);
  });
}

}  // namespace cai::cli
