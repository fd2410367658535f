// The `cai` verbs: each registers its subcommand and options; the callback sets the process exit code.
#pragma once

#include <CLI/CLI.hpp>

#include <optional>
#include <string>
#include <string_view>

#include "cai/engine.h"
#include "chips/detect.h"
#include "chips/device_profile.h"
#include "hal/hal.h"
#include "model/model_loader.h"
#include "runtime/sampler.h"

namespace cai::cli {

// Options every model-running verb shares.
struct CommonOptions {
  std::string model;
  std::string device = "cpu";
  int threads = 0;                       // 0 = all hardware threads
  std::optional<bool> prewarm_experts;   // unset: the device profile's expert_prewarm
  std::string kv_dtype;                  // "" = the device profile's, else the device's default (default_kv_dtype)
  std::string profile;                   // --profile: the device profile to apply instead of the detected one
  std::optional<float> thermal_limit_c;  // --thermal-limit (serve); unset: the profile's; 0 = off
  std::optional<int> kv_offload_layers;  // --kv-offload-layers (serve); unset: as the profile's plan says
  bool mlock = false;
  // "fast": integer activations and dot products where the CPU has a kernel for the weight type (the default of the
  // verbs that serve, run and benchmark); "exact": F32 activations, the reference path (`cai eval`'s default).
  std::string precision = "fast";
  bool repack = true;  // --no-repack: keep the file's weight layout under fast (LoadOptions::repack)
  // The layout over a --device list (docs/multi-device.md): pipeline stages (one per device), their layer counts, and
  // the device that keeps and runs the routed experts.
  int tp = 1;
  int ep = 1;
  int pp = 0;  // 0: devices / tp stages
  std::vector<int> layer_split;
  std::string moe_device;
  std::string plan_file;             // --plan: the `layout` of `cai plan --json` output
  int devices_per_rank = 1;          // --devices-per-rank: the devices each process of an MPI job drives
  double collective_timeout_s = 30;  // --collective-timeout: across the processes of an MPI job
  // --spec, --spec-tokens, --spec-ngram-min/max, --draft-model (add_spec_options); spec_method holds --spec's text.
  std::string spec_method = "off";
  SpecOptions spec;
  bool load_mtp = false;     // load the MTP module without --spec mtp (eval --mtp-logits)
  std::string draft_device;  // --draft-device: where --spec draft runs its model ("" = the model's first device)
};
void add_common_options(CLI::App& cmd, CommonOptions& o);
// --tp, --ep, --pp, --layer-split, --plan and --moe-device (part of add_common_options).
void add_layout_options(CLI::App& cmd, CommonOptions& o);
// Whether a device list names the CPU alone (plugins need not be loaded); "" does.
bool names_only_cpu(const std::string& list);
// The --device list with --tp, --pp, --layer-split and --moe-device, or with --plan FILE's layout, as a layout. Counts
// that do not match the device list, and a plan file that conflicts with those flags or asks what one process does not
// run (several replicas), are refused naming the numbers.
Result<Layout> layout_from_options(const CommonOptions& o, const hal::Registry& reg, const std::string& devices);
// The devices of a --device list: the list's own, or in an MPI job (mpirun -np N) one per rank in rank order, this
// rank's being the entry at its local rank on its machine (every rank's the CPU when the list is the CPU alone) and
// the others' stand-ins (hal::RemoteDevice). Errors: as Registry::find_devices; a local rank past the list's end.
Result<std::vector<hal::Device*>> job_device_list(const hal::Registry& reg, const std::string& list, int per_rank);
// Whether any of --tp, --ep, --pp, --layer-split or --plan was given.
bool layout_flags_given(const CommonOptions& o);
// A device list given alone, on devices with a profile: the layout `cai plan` picks for this model on that many of
// them (at context `ctx`), where it uses them all in one replica; else the list stays pipeline stages (logged).
Status plan_default_layout(const CommonOptions& o, const chips::DeviceProfile& profile, int64_t ctx, Layout& layout);
// Resolve the device (loading plugins), apply its profile's policies where the options leave them unset (logging the
// profile, each policy and the temperature sensor) and load the model, which must fit the device's memory together
// with the KV cache the verb will allocate (LoadOptions::kv_tokens, kv_bytes). `engine` is given by verbs that run a
// serving engine, with their context and batch set: open_model fills in what the device and its profile supply (the
// thermal limit, the KV layers that go to host memory). Errors are printed as "error: ..." to stderr.
Result<LoadedModel> open_model(const CommonOptions& o, int64_t kv_tokens, size_t kv_bytes = 0,
                               EngineOptions* engine = nullptr);
// Speculative decoding: --spec off|ngram|mtp|draft, --spec-tokens K, --spec-ngram-min/max, --draft-model PATH.
void add_spec_options(CLI::App& cmd, CommonOptions& o);
// o.spec with the method parsed from o.spec_method and every number checked.
Result<SpecOptions> spec_options(const CommonOptions& o);
// --spec draft: the --draft-model, loaded on --draft-device, with the target's vocabulary (token for token where both
// have a tokenizer); an empty LoadedModel for the other methods.
Result<LoadedModel> load_draft_model(const CommonOptions& o, const LoadedModel& target);
// --kv-offload-layers for a serving verb.
void add_kv_offload_option(CLI::App& cmd, CommonOptions& o);
// What detection knows about this host; without readable profiles nothing is recognised and no policy applies.
struct HostChips {
  std::vector<chips::DeviceProfile> profiles;
  chips::DetectReport report;
};
// The profiles and the detection report; runtime libraries are probed (dlopen) only with probe_runtimes (--device
// auto, which needs to know what is usable).
HostChips scan_host(const hal::Registry& reg, bool probe_runtimes);
// Print a Status to stderr and return exit code 1.
int fail(const Status& st);
// --temp, --top-k, --top-p, --min-p, --repeat-penalty, --seed.
void add_sampling_options(CLI::App& cmd, SamplingParams& s);
// A whole file as text; `what` names it in the error, e.g. "chat template file".
Result<std::string> read_text_file(const std::string& path, std::string_view what);

void register_run(CLI::App& app, int& exit_code);
void register_tokenize(CLI::App& app, int& exit_code);
void register_eval(CLI::App& app, int& exit_code);
void register_bench(CLI::App& app, int& exit_code);
void register_serve(CLI::App& app, int& exit_code);
void register_plan(CLI::App& app, int& exit_code);
void register_detect(CLI::App& app, int& exit_code);
void register_chat(CLI::App& app, int& exit_code);
void register_doctor(CLI::App& app, int& exit_code);

}  // namespace cai::cli
