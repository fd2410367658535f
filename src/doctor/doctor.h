// The health check of one device (`cai doctor`): each step runs a piece of what serving needs on the device and
// passes or fails with its name and the underlying error, so an operator learns which piece is broken (the driver, a
// kernel, memory) before a model is loaded.
#pragma once

#include <cstddef>
#include <functional>
#include <string>
#include <vector>

#include "chips/device_profile.h"
#include "hal/hal.h"

namespace cai::doctor {

struct StepResult {
  std::string step;
  bool ok = false;
  std::string detail;  // what was measured, or why it failed
  double seconds = 0;
};

// The steps in the order they run:
//   backend     the device answers: its stream synchronizes, its memory and telemetry are read
//   memory      a buffer of CheckOptions::memory_bytes is allocated and a pattern makes a round trip through it
//   ops         the op table check (op_check.h) against the reference ops
//   model_bf16  a tiny DeepSeek-V3-architecture model (MLA, a dense layer, MoE layers with shared experts and the
//   model_fp8   grouped sigmoid router; BF16 and block-scaled FP8 weights) against the reference logits shipped with
//               CAI: every prompt's logits and 8 greedy tokens each, with an F32 KV cache
//   model_quant a small Llama in the GGUF types R1's files use most (Q8_0, Q4_0, Q4_K, Q6_K) with the kernels the
//               device serves with (--precision fast: the CPU's integer ones), against its F32 twin's logits
//   bandwidth   memory bandwidth measured as `cai bench` does, against the device profile's figure
const std::vector<std::string>& step_names();

// The folder of the reference model: BF16 at its top, FP8 in fp8/ (config.json, model.safetensors, tokens.json and
// the reference logits of each prompt). $CAI_DOCTOR_DIR, else share/cai/doctor beside the binary, else the source
// tree's tests/data/oracle/deepseek_v3_tiny.
std::string default_reference_dir();
// The folder of the quantized models (<T>.gguf) and their F32 twins' logits (<T>.twin_logits.f32):
// $CAI_DOCTOR_QUANTS_DIR, else share/cai/doctor/quants beside the binary, else the source tree's tests/data/quants.
std::string default_quants_dir();

struct CheckOptions {
  std::string reference_dir = default_reference_dir();
  std::string quants_dir = default_quants_dir();
  size_t memory_bytes = size_t(256) << 20;  // the memory step's buffer, and each of the bandwidth probe's on a device
  double logit_tolerance = 1e-3;  // max |logit - reference| (the device oracle tests' bound; the CPU reaches 1e-5)
  // max |logit - twin| over max |twin| for the quantized models: int8 activations round to about 1e-2 of the largest
  // logit (tests/cli/quant_twins_test.cpp); a wrong block layout or packing misses by the whole logit range.
  double quant_tolerance = 2e-2;
  // A measured bandwidth below this fraction of the profile's fails (a card in a slow PCIe slot or power state reads
  // far below its figure; a healthy one reaches 0.6-0.9 of it).
  double min_bandwidth_fraction = 0.25;
  const chips::DeviceProfile* profile = nullptr;  // the device's profile, where one matches
  std::string runtime;                            // what the backend runs on (hal::Backend::runtime())
};

// Runs every step on `device`, in order; a step that fails does not stop the later ones. begin(step) is called as a
// step starts and done(result) as it ends (a parent process that times a step out knows which one hung).
std::vector<StepResult> check_device(hal::Device& device, const CheckOptions& options,
                                     const std::function<void(const std::string&)>& begin,
                                     const std::function<void(const StepResult&)>& done);

// The steps one by one (check_device runs them in order).
StepResult check_backend(hal::Device& device, const CheckOptions& options);
StepResult check_memory(hal::Device& device, const CheckOptions& options);
StepResult check_op_table(hal::Device& device);
// `variant`: "bf16" (the reference folder's top) or "fp8" (its fp8/ folder).
StepResult check_model(hal::Device& device, const std::string& variant, const CheckOptions& options);
StepResult check_quant_models(hal::Device& device, const CheckOptions& options);
StepResult check_bandwidth(hal::Device& device, const CheckOptions& options);

}  // namespace cai::doctor
