// Shared CLI plumbing: model/device/thread options and error printing.
#include <cstdio>

#include "chips/detect_report.h"
#include "core/log.h"
#include "hal/cpu/cpu_backend.h"
#include "verbs.h"

namespace cai::cli {

void add_common_options(CLI::App& cmd, CommonOptions& o) {
  cmd.add_option("-m,--model", o.model, "a .gguf file or a Hugging Face model directory")->required();
  cmd.add_option("--device", o.device,
                 "device to run on: cpu, a plugin backend such as cuda:0, or auto (the usable accelerator with the most "
                 "memory, else cpu; see `cai detect`)");
  cmd.add_option("-t,--threads", o.threads, "CPU threads (0 = all)");
  cmd.add_flag("--prewarm-experts", o.prewarm_experts, "touch every MoE expert's weight pages at load");
  cmd.add_option("--kv-dtype", o.kv_dtype,
                 "KV cache element type: f32, bf16, f16 or q8_0 (cpu only; default: f32 on cpu, bf16 on devices "
                 "with own memory)");
  cmd.add_option("--precision", o.precision,
                 "exact: F32 activations, as the reference; fast: int8 activations and int8 dot products for "
                 "Q8_0/Q4_0/Q2_K..Q6_K weights on the CPU")
      ->check(CLI::IsMember({"fast", "exact"}))
      ->capture_default_str();
  cmd.add_flag("--mlock", o.mlock, "lock the weights in RAM (CPU; needs RLIMIT_MEMLOCK, `ulimit -l`, above their size)");
}

int fail(const Status& st) {
  std::fprintf(stderr, "error: %s\n", st.to_string().c_str());
  return 1;
}

namespace {

// --device auto: the same detection as `cai detect`; without readable profiles nothing is recognised and the CPU runs.
std::string auto_device(const hal::Registry& reg) {
  auto profiles = chips::load_profiles(chips::default_profile_dir());
  if (!profiles.ok()) CAI_LOG_WARN("--device auto: {}; accelerators cannot be recognised", profiles.status().to_string());
  const chips::DetectReport report = chips::detect(profiles.ok() ? profiles.value() : std::vector<chips::DeviceProfile>{},
                                                   reg, chips::DetectOptions::from_env());
  const chips::AutoDevice choice = chips::choose_auto_device(report);
  CAI_LOG_INFO("--device auto: chose {}: {}", choice.device, choice.reason);
  return choice.device;
}

}  // namespace

Result<LoadedModel> open_model(const CommonOptions& o, int64_t kv_tokens, size_t kv_bytes) {
  LoadOptions load{o.prewarm_experts, std::nullopt, o.mlock, kv_tokens, kv_bytes};
  if (!o.kv_dtype.empty()) {
    CAI_ASSIGN_OR_RETURN(load.kv_dtype, parse_kv_dtype(o.kv_dtype));
  }
  hal::Registry& reg = hal::Registry::global();
  if (o.device.rfind("cpu", 0) != 0) reg.load_plugins_from_default_paths();
  hal::cpu::set_cpu_threads(o.threads);
  const std::string spec = o.device == "auto" ? auto_device(reg) : o.device;
  CAI_ASSIGN_OR_RETURN(hal::Device * dev, reg.find_device(spec));
  dev->set_precision(o.precision == "exact" ? hal::Precision::kExact : hal::Precision::kFast);
  if (o.precision == "fast")
    CAI_LOG_INFO("--precision fast: int8 activations and dot products for Q8_0/Q4_0/Q2_K..Q6_K weights where {} has "
                 "such kernels (the CPU does; other devices compute exactly)",
                 dev->name());
  return load_model(o.model, *dev, load);
}

}  // namespace cai::cli
