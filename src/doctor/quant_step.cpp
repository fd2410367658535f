// The quantized-model step: small Llama models in the GGUF types R1's files use most, loaded with the kernels the
// device serves with, against the logits their exact F32 twins give (tests/data/quants/README.md).
#include <algorithm>
#include <cmath>

#include "doctor/doctor.h"
#include "doctor/reference_logits.h"
#include "model/model_loader.h"
#include "runtime/single_sequence.h"

namespace cai::doctor {

namespace {

constexpr const char* kTypes[] = {"Q8_0", "Q4_0", "Q4_K", "Q6_K"};
const std::vector<int32_t> kTokens = {1, 2, 3, 4, 5, 6, 7, 8};  // the twins' logits are of these

// max |logit - twin| / max |twin| of one type's model on the device.
Result<double> relative_error(hal::Device& device, const std::string& dir, const std::string& type) {
  LoadOptions load;
  load.kv_dtype = DType::kF32;
  load.kv_tokens = static_cast<int64_t>(kTokens.size()) + 1;
  CAI_ASSIGN_OR_RETURN(LoadedModel lm, load_model(dir + "/" + type + ".gguf", device, load));
  CAI_ASSIGN_OR_RETURN(SingleSequence seq, SingleSequence::create(*lm.model, static_cast<int>(kTokens.size()) + 1));
  CAI_ASSIGN_OR_RETURN(const std::vector<float> logits, seq.step(kTokens, /*all_logits=*/true));
  CAI_ASSIGN_OR_RETURN(const std::vector<float> twin,
                       read_reference_logits(dir + "/" + type + ".twin_logits.f32", kTokens.size(),
                                             static_cast<size_t>(lm.model->config().vocab_size)));
  double ref = 0;
  for (float v : twin) ref = std::max(ref, std::fabs(static_cast<double>(v)));
  if (ref == 0) return corrupt("the reference {}.twin_logits.f32 is all zeros", type);
  return max_diff(logits, twin).max / ref;
}

}  // namespace

StepResult check_quant_models(hal::Device& device, const CheckOptions& options) {
  StepResult r{"model_quant", false, ""};
  device.set_precision(hal::Precision::kFast);  // what serving runs: the CPU's integer kernels
  device.set_batch_invariant(false);
  std::string measured;
  for (const char* type : kTypes) {
    Result<double> err = relative_error(device, options.quants_dir, type);
    if (!err.ok()) {
      r.detail = fmt::format("{}: {}", type, err.status().to_string());
      break;
    }
    measured += fmt::format("{}{} {:.1e}", measured.empty() ? "" : ", ", type, *err);
    if (*err > options.quant_tolerance) {
      r.detail = fmt::format("{}: max |logit - twin| is {:.3g} of the largest logit (allowed {:.0e}); {}", type, *err,
                             options.quant_tolerance, measured);
      break;
    }
  }
  device.set_precision(hal::Precision::kExact);
  if (!r.detail.empty()) return r;
  r.ok = true;
  r.detail = fmt::format(
      "a 1-layer Llama in each type with the serving kernels, max |logit - twin| / max |logit|: {} (allowed {:.0e})",
      measured, options.quant_tolerance);
  return r;
}

}  // namespace cai::doctor
