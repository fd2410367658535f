// check_device: the steps in order, timed, each reported as it begins and ends; and the op table step.
#include "doctor/doctor.h"

#include <fmt/ranges.h>

#include <algorithm>
#include <chrono>

#include "chips/data_dir.h"
#include "doctor/op_check.h"

namespace cai::doctor {

namespace {

struct Step {
  const char* name;
  StepResult (*run)(hal::Device&, const CheckOptions&);
};
const Step kSteps[] = {
    {"backend", check_backend},
    {"memory", check_memory},
    {"ops", [](hal::Device& d, const CheckOptions&) { return check_op_table(d); }},
    {"model_bf16", [](hal::Device& d, const CheckOptions& o) { return check_model(d, "bf16", o); }},
    {"model_fp8", [](hal::Device& d, const CheckOptions& o) { return check_model(d, "fp8", o); }},
    {"model_quant", check_quant_models},
    {"bandwidth", check_bandwidth},
};

}  // namespace

const std::vector<std::string>& step_names() {
  static const std::vector<std::string> names = [] {
    std::vector<std::string> out;
    for (const Step& s : kSteps) out.push_back(s.name);
    return out;
  }();
  return names;
}

// CAI_DOCTOR_SOURCE_DIR and CAI_DOCTOR_QUANTS_SOURCE_DIR: the source tree's folders (CMakeLists.txt), for runs from
// the build tree.
std::string default_reference_dir() { return chips::find_data_dir("CAI_DOCTOR_DIR", "doctor", CAI_DOCTOR_SOURCE_DIR); }

std::string default_quants_dir() {
  return chips::find_data_dir("CAI_DOCTOR_QUANTS_DIR", "doctor/quants", CAI_DOCTOR_QUANTS_SOURCE_DIR);
}

// "3 skipped: no rms_norm, q8_0 KV cache; refused: embed_f16 (echo takes F32 tables)" for the cases not run.
std::string skipped_text(const OpCheckReport& report) {
  std::vector<std::string> lacks, refused;
  std::string first_refusal;
  for (const CaseResult& c : report.cases) {
    if (c.outcome != CaseOutcome::kSkipped) continue;
    if (c.lacks.empty()) {
      refused.push_back(c.name);
      if (first_refusal.empty()) first_refusal = c.detail;
    } else if (std::find(lacks.begin(), lacks.end(), c.lacks) == lacks.end()) {
      lacks.push_back(c.lacks);
    }
  }
  if (lacks.empty() && refused.empty()) return "";
  std::string out = fmt::format("; {} skipped:", report.count(CaseOutcome::kSkipped));
  if (!lacks.empty()) out += fmt::format(" no {}", fmt::join(lacks, ", "));
  if (!refused.empty())
    out += fmt::format("{} refused: {} ({})", lacks.empty() ? "" : ";", fmt::join(refused, ", "), first_refusal);
  return out;
}

StepResult check_op_table(hal::Device& device) {
  const OpCheckReport report = check_ops(device);
  StepResult r{"ops", false, ""};
  const int failed = report.count(CaseOutcome::kFail), passed = report.count(CaseOutcome::kPass);
  double worst = 0;
  std::vector<std::string> failures;
  for (const CaseResult& c : report.cases) {
    if (c.outcome == CaseOutcome::kPass) worst = std::max(worst, c.worst);
    if (c.outcome == CaseOutcome::kFail) failures.push_back(c.name + ": " + c.detail);
  }
  r.ok = failed == 0 && passed > 0;
  if (failed > 0)
    r.detail = fmt::format("{} of {} cases failed: {}", failed, report.cases.size(), fmt::join(failures, "; "));
  else
    r.detail = fmt::format("{} cases passed (the largest error {:.0f}% of its tolerance)", passed, worst * 100);
  r.detail += skipped_text(report);
  return r;
}

std::vector<StepResult> check_device(hal::Device& device, const CheckOptions& options,
                                     const std::function<void(const std::string&)>& begin,
                                     const std::function<void(const StepResult&)>& done) {
  std::vector<StepResult> results;
  for (const Step& s : kSteps) {
    begin(s.name);
    const auto t0 = std::chrono::steady_clock::now();
    StepResult r = s.run(device, options);
    r.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    done(r);
    results.push_back(std::move(r));
  }
  return results;
}

}  // namespace cai::doctor
