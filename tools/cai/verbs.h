// The `cai` verbs: each registers its subcommand and options; the callback sets the process exit code.
#pragma once

#include <CLI/CLI.hpp>

#include <string>

#include "hal/hal.h"
#include "model/model_loader.h"

namespace cai::cli {

// Options every model-running verb shares.
struct CommonOptions {
  std::string model;
  std::string device = "cpu";
  int threads = 0;  // 0 = all hardware threads
  bool prewarm_experts = false;
  std::string kv_dtype;  // "" = the device's default (default_kv_dtype)
  bool mlock = false;
  // "fast": int8 activations and dot products where the CPU has a kernel for the weight type; "exact": F32 activations
  // (the reference path, and the default until the fast path meets its quality gate: see tests/cli/precision_cli_test).
  std::string precision = "exact";
};
void add_common_options(CLI::App& cmd, CommonOptions& o);
// Resolve the device (loading plugins) and load the model, which must fit the device's memory together with the KV
// cache the verb will allocate (LoadOptions::kv_tokens, kv_bytes); errors are printed as "error: ..." to stderr.
Result<LoadedModel> open_model(const CommonOptions& o, int64_t kv_tokens, size_t kv_bytes = 0);
// Print a Status to stderr and return exit code 1.
int fail(const Status& st);

void register_run(CLI::App& app, int& exit_code);
void register_tokenize(CLI::App& app, int& exit_code);
void register_eval(CLI::App& app, int& exit_code);
void register_bench(CLI::App& app, int& exit_code);
void register_serve(CLI::App& app, int& exit_code);
void register_plan(CLI::App& app, int& exit_code);
void register_detect(CLI::App& app, int& exit_code);

}  // namespace cai::cli
