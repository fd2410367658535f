// Shared CLI plumbing: model/device/thread options, the device profile's policies, and error printing.
#include <algorithm>
#include <cstdio>
#include <fstream>
#include <sstream>

#include "chips/detect_report.h"
#include "chips/device_policy.h"
#include "chips/planner.h"
#include "core/log.h"
#include "dist/process_roles.h"
#include "hal/remote_device.h"
#include "hal/cpu/cpu_backend.h"
#include "verbs.h"

namespace cai::cli {

void add_common_options(CLI::App& cmd, CommonOptions& o) {
  cmd.add_option("-m,--model", o.model, "a .gguf file or a Hugging Face model directory")->required();
  cmd.add_option(
      "--device", o.device,
      "device to run on: cpu, a plugin backend such as cuda:0, or auto (the usable accelerator with the most "
      "memory, else cpu; see `cai detect`); a list (simt:0,simt:1, cuda:0-3, cpu,simt:0) runs the model "
      "over several devices");
  add_layout_options(cmd, o);
  cmd.add_option("-t,--threads", o.threads, "CPU threads (0 = all)");
  cmd.add_flag_function(
      "--prewarm-experts,!--no-prewarm-experts", [&o](int64_t n) { o.prewarm_experts = n > 0; },
      "touch every MoE expert's weight pages at load (default: the device profile's expert_prewarm)");
  cmd.add_option("--kv-dtype", o.kv_dtype,
                 "KV cache element type: f32, bf16, f16 or q8_0 (cpu only; default: the device profile's, else f32 on "
                 "cpu, bf16 on devices with own memory)");
  cmd.add_option("--profile", o.profile,
                 "device profile whose policies apply (an id from data/chips, e.g. nvidia-h200-sxm; default: the "
                 "profile `cai detect` matches to the device)");
  cmd.add_option("--precision", o.precision,
                 "exact: F32 activations, as the reference; fast: integer activations and dot products for "
                 "Q8_0/Q4_0/Q2_K..Q6_K/IQ4_NL/IQ4_XS weights on the CPU")
      ->check(CLI::IsMember({"fast", "exact"}))
      ->capture_default_str();
  cmd.add_flag("--repack,!--no-repack", o.repack,
               "fast: pack Q8_0/Q4_0/Q2_K..Q6_K/IQ4_NL/IQ4_XS projections and MoE experts into 16-row groups at "
               "load (default), or keep the file's row-major layout (IQ4_NL / IQ4_XS then compute exactly)");
  cmd.add_flag("--mlock", o.mlock,
               "lock the weights in RAM (CPU; needs RLIMIT_MEMLOCK, `ulimit -l`, above their size)");
}

void add_kv_offload_option(CLI::App& cmd, CommonOptions& o) {
  cmd.add_option("--kv-offload-layers", o.kv_offload_layers,
                 "keep the KV cache of N layers in host memory, streamed to the device each step (the last layers; "
                 "over pipeline stages, each stage's last layers in proportion to its layers; devices with their own "
                 "memory; default on one device: the layers `cai plan` sends to host memory for its profile, context "
                 "and batch; 0 = none)")
      ->check(CLI::NonNegativeNumber);
}

int fail(const Status& st) {
  std::fprintf(stderr, "error: %s\n", st.to_string().c_str());
  return 1;
}

void add_sampling_options(CLI::App& cmd, SamplingParams& s) {
  cmd.add_option("--temp", s.temperature, "temperature; 0 = greedy")->check(CLI::NonNegativeNumber);
  cmd.add_option("--top-k", s.top_k, "top-k (0 = off)")->check(CLI::NonNegativeNumber);
  cmd.add_option("--top-p", s.top_p, "top-p (1 = off)")->check(CLI::Range(0.0, 1.0));
  cmd.add_option("--min-p", s.min_p, "min-p (0 = off)")->check(CLI::Range(0.0, 1.0));
  cmd.add_option("--repeat-penalty", s.repetition_penalty, "repetition penalty (1 = off)");
  cmd.add_option("--seed", s.seed, "random seed");
}

Result<std::string> read_text_file(const std::string& path, std::string_view what) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return io_error("cannot read {} {}", what, path);
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

HostChips scan_host(const hal::Registry& reg, bool probe_runtimes) {
  HostChips h;
  auto profiles = chips::load_profiles(chips::default_profile_dir());
  if (profiles.ok())
    h.profiles = std::move(profiles).value();
  else
    CAI_LOG_WARN("{}; devices cannot be matched to profiles", profiles.status().to_string());
  chips::DetectOptions options = chips::DetectOptions::from_env();
  if (!probe_runtimes)
    options.probe = [](const std::string& name) { return chips::LibraryProbe{name, false, "not probed"}; };
  h.report = chips::detect(h.profiles, reg, options);
  return h;
}

namespace {

// --device auto: the same choice as `cai detect` shows.
std::string auto_device(const chips::DetectReport& report) {
  const chips::AutoDevice choice = chips::choose_auto_device(report);
  CAI_LOG_INFO("--device auto: chose {}: {}", choice.device, choice.reason);
  return choice.device;
}

// The device's profile (null: none describes it) and the options it supplies where the user set none.
struct DevicePolicies {
  const chips::DeviceProfile* profile = nullptr;
  chips::PolicyOptions options;
};

// Logs the profile and each policy.
Result<DevicePolicies> device_policies(const CommonOptions& o, const HostChips& host, const hal::Device& dev,
                                       bool has_engine) {
  DevicePolicies d;
  chips::PolicyOptions& pol = d.options;
  if (!o.kv_dtype.empty()) pol.kv_dtype = o.kv_dtype;
  pol.prewarm_experts = o.prewarm_experts;
  pol.thermal_limit_c = o.thermal_limit_c;
  pol.kv_offload_layers = o.kv_offload_layers;
  pol.has_engine = has_engine;
  CAI_ASSIGN_OR_RETURN(chips::ProfileChoice choice,
                       chips::profile_for_device(host.report, host.profiles, dev.name(), o.profile));
  if (!choice.profile) {
    CAI_LOG_INFO("{}: no device profile ({}); engine defaults apply", dev.name(), choice.reason);
    return d;
  }
  d.profile = choice.profile;
  CAI_LOG_INFO("{}: device profile {} ({}; {})", dev.name(), choice.profile->id, choice.profile->name, choice.reason);
  for (const std::string& line : chips::apply_policies(choice.profile->policies, pol))
    CAI_LOG_INFO("  policy {}", line);
  return d;
}

// The KV layers a serving engine keeps in host memory: --kv-offload-layers as given; else, where the profile's
// host_offload_below applies, those `cai plan` sends to host memory for this model on one card with this device's
// memory at the engine's context and batch (the log line is that command, so the two can be compared); else (and
// for a model over several devices, which that one-card plan does not describe) none.
Result<int> kv_offload_layers(const CommonOptions& o, const DevicePolicies& d, const hal::Device& dev,
                              const EngineOptions& e, DType kv_dtype, const Layout& layout) {
  if (o.kv_offload_layers) return *o.kv_offload_layers;
  if (!d.options.host_offload_below) return 0;
  if (layout.devices.size() > 1) {
    CAI_LOG_INFO(
        "KV offload: none: the profile's plan is for one card and the layers run on {} devices "
        "(--kv-offload-layers N offloads over them)",
        layout.devices.size());
    return 0;
  }
  if (dev.host_visible()) {
    CAI_LOG_INFO("KV offload: none on {}: its KV cache is in host memory already", dev.name());
    return 0;
  }
  CAI_ASSIGN_OR_RETURN(const chips::ModelFootprint model, chips::load_footprint(o.model));
  chips::PlanRequest request;
  request.ctx = e.ctx_size;
  request.batch = e.max_batch;
  request.kv_dtype = std::string(dtype_name(kv_dtype));
  request.memory_gib = static_cast<double>(dev.memory_info().total_bytes) / static_cast<double>(size_t{1} << 30);
  request.step_tokens = e.max_tokens_per_step;
  CAI_ASSIGN_OR_RETURN(const chips::Plan plan, chips::make_plan(model, *d.profile, request));
  const std::string command = fmt::format(
      "cai plan -m {} --chip {} --cards 1 --memory-gib {} --ctx {} --batch {} "
      "--kv-dtype {} --step-tokens {}",
      o.model, d.profile->id, *request.memory_gib, plan.request.ctx, request.batch, request.kv_dtype,
      request.step_tokens);
  if (!plan.fits) {
    CAI_LOG_WARN("KV offload: `{}` finds no fit even with host layers; every layer stays on {}", command, dev.name());
    return 0;
  }
  CAI_LOG_INFO("KV offload: `{}` puts {} of {} layers' KV in host memory", command, plan.kv_offload_layers,
               model.config.num_hidden_layers);
  return plan.kv_offload_layers;
}

// Which sensor the thermal limit reads, or that there is none.
void log_sensor(const hal::Device& dev, float thermal_limit_c) {
  const std::string sensor = dev.telemetry_sensor();
  const std::optional<float> now = dev.telemetry().temperature_c;
  if (!sensor.empty() && now)
    CAI_LOG_INFO("{}: temperature sensor {}: {:.1f} °C", dev.name(), sensor, *now);
  else
    CAI_LOG_INFO("{}: no temperature sensor", dev.name());
  if (thermal_limit_c > 0 && !now)
    CAI_LOG_WARN("thermal limit {:g} °C has no effect: {} reports no temperature", thermal_limit_c, dev.name());
  else if (thermal_limit_c > 0)
    CAI_LOG_INFO("thermal limit {:g} °C: the step token budget halves while {} is at or above it", thermal_limit_c,
                 dev.name());
}

// The profile every rank of an MPI job has for its device (each process knows only its own): the ranks show each
// other theirs, so that every one reaches the same answer. Null where they differ or one has none.
Result<const chips::DeviceProfile*> job_profile(hal::ProcessGroup& group, const chips::DeviceProfile* mine) {
  CAI_ASSIGN_OR_RETURN(const bool same,
                       hal::same_on_ranks(group, mine ? mine->id : "", hal::every_rank(group), hal::startup_timeout()));
  return same ? mine : nullptr;
}

}  // namespace

Result<LoadedModel> open_model(const CommonOptions& o, int64_t kv_tokens, size_t kv_bytes, EngineOptions* engine) {
  hal::Registry& reg = hal::Registry::global();
  if (!names_only_cpu(o.device) || !names_only_cpu(o.moe_device)) reg.load_plugins_from_default_paths();
  hal::cpu::set_cpu_threads(o.threads);
  const HostChips host = scan_host(reg, o.device == "auto");
  const std::string spec = o.device == "auto" ? auto_device(host.report) : o.device;
  hal::set_collective_timeout(o.collective_timeout_s);
  CAI_ASSIGN_OR_RETURN(Layout layout, layout_from_options(o, reg, spec));
  hal::ProcessGroup* group = hal::process_group();
  // The device whose profile applies: this process's first (in an MPI job, its own).
  hal::Device* dev = *std::find_if(layout.devices.begin(), layout.devices.end(),
                                   [](const hal::Device* d) { return !hal::is_remote(*d); });
  CAI_ASSIGN_OR_RETURN(const DevicePolicies policies, device_policies(o, host, *dev, engine != nullptr));
  // A device list given alone: the planner's layout where the devices have a profile (in an MPI job, the one every
  // rank's device has), else pipeline stages. The planner does not place experts on another device (--moe-device).
  if (layout.devices.size() > 1 && !layout_flags_given(o) && o.moe_device.empty()) {
    const chips::DeviceProfile* profile = policies.profile;
    if (group) {
      CAI_ASSIGN_OR_RETURN(profile, job_profile(*group, policies.profile));
    }
    if (profile)
      CAI_TRY(plan_default_layout(o, *profile, kv_tokens, layout));
    else
      CAI_LOG_INFO("layout: {} no device profile to plan with; the {} devices run as pipeline stages",
                   group ? "the ranks' devices share" : dev->name() + " has", layout.devices.size());
  }
  const chips::PolicyOptions& pol = policies.options;
  LoadOptions load{pol.prewarm_experts.value_or(false), std::nullopt, o.mlock, kv_tokens, kv_bytes};
  CAI_ASSIGN_OR_RETURN(const SpecOptions speculation, spec_options(o));
  load.mtp = o.load_mtp || speculation.method == SpecMethod::kMtp;
  if (pol.kv_dtype) {
    CAI_ASSIGN_OR_RETURN(load.kv_dtype, parse_kv_dtype(*pol.kv_dtype));
  }
  if (engine) {
    engine->thermal_limit_c = pol.thermal_limit_c.value_or(0.0f);
    log_sensor(*dev, engine->thermal_limit_c);
    CAI_ASSIGN_OR_RETURN(
        engine->kv_offload_layers,
        kv_offload_layers(o, policies, *dev, *engine, load.kv_dtype.value_or(default_kv_dtype(*dev)), layout));
  }
  std::vector<hal::Device*> used = layout.devices;
  used.insert(used.end(), layout.moe_devices.begin(), layout.moe_devices.end());
  for (hal::Device* d : used) d->set_precision(o.precision == "exact" ? hal::Precision::kExact : hal::Precision::kFast);
  load.repack = o.repack;
  if (o.precision == "fast")
    CAI_LOG_INFO(
        "--precision fast: integer dot products for Q8_0 (16-bit activations; int8 for the MLP's gate and up, "
        "and for a head beside coarser layers, where packed), Q4_0, Q2_K..Q6_K and packed IQ4_NL / IQ4_XS "
        "(int8) weights where {} has such kernels (the CPU does{}, and with AVX-512 BF16 multiplies MLA's "
        "latent cache in BF16; other devices compute exactly)",
        dev->name(),
        o.repack ? ", and packs Q8_0/Q4_0/Q2_K..Q6_K/IQ4_NL/IQ4_XS projections and MoE experts into 16-row "
                   "groups at load"
                 : "; --no-repack: the weights keep the file's layout");
  else if (!o.repack)
    CAI_LOG_WARN("--no-repack changes nothing under --precision exact: only the fast path repacks weights");
  CAI_ASSIGN_OR_RETURN(LoadedModel lm, load_model(o.model, layout, load));
  if (!group) return lm;
  CAI_TRY(dist::check_same_model(*lm.model, *group));
  if (dist::is_worker()) dist::run_worker(*lm.model, *group);
  lm.model = dist::make_leader_model(std::move(lm.model), *group);
  return lm;
}

}  // namespace cai::cli
