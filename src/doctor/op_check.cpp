// Running the op table check's cases on a device against the reference ops.
#include <algorithm>
#include <cmath>

#include "doctor/op_check.h"
#include "ops/ref/ref_ops.h"

namespace cai::doctor {

namespace {

// What `device` lacks to run the case, or "" when it has it all.
std::string missing(const OpCase& c, const hal::Device& device) {
  for (hal::OpId op : c.ops) {
    if (!device.supports(op)) return hal::op_name(op);
    if (!device.supports(op, c.weight)) return fmt::format("{} for {}", hal::op_name(op), dtype_name(c.weight));
  }
  if (!device.supports_kv_dtype(c.kv)) return fmt::format("{} KV cache", dtype_name(c.kv));
  return "";
}

CaseResult result(const OpCase& c, CaseOutcome outcome, std::string detail = "", std::string lacks = "") {
  CaseResult r;
  r.name = c.name;
  r.outcome = outcome;
  r.detail = std::move(detail);
  r.lacks = std::move(lacks);
  return r;
}

// The outcome of values `got` against `want`.
CaseResult compare(const OpCase& c, const std::vector<float>& got, const std::vector<float>& want) {
  CaseResult r = result(c, CaseOutcome::kPass);
  if (got.size() != want.size()) {
    r.outcome = CaseOutcome::kFail;
    r.detail = fmt::format("{} values, the reference has {}", got.size(), want.size());
    return r;
  }
  size_t at = 0;
  for (size_t i = 0; i < got.size(); ++i) {
    const double allowed = static_cast<double>(c.tol) * (1.0 + std::fabs(want[i]));
    const double err = std::fabs(static_cast<double>(got[i]) - want[i]);
    // NaN compares false everywhere: it is the worst a value can be.
    const double ratio = std::isnan(err) ? INFINITY : allowed > 0 ? err / allowed : (err > 0 ? INFINITY : 0.0);
    if (ratio > r.worst) r.worst = ratio, at = i;
  }
  if (r.worst > 1.0) {
    r.outcome = CaseOutcome::kFail;
    r.detail = fmt::format("at {} of {}: got {}, want {} (allowed {:.3g})", at, got.size(), got[at], want[at],
                           static_cast<double>(c.tol) * (1.0 + std::fabs(want[at])));
  }
  return r;
}

}  // namespace

CaseResult run_op_case(const OpCase& c, hal::Device& device) {
  if (std::string lacks = missing(c, device); !lacks.empty())
    return result(c, CaseOutcome::kSkipped, device.name() + " has no " + lacks, lacks);
  CaseTensors host(nullptr), on_device(&device);
  Result<std::vector<float>> want = c.run(ops::ref::op_table(), hal::OpContext{}, host);
  if (!want.ok() || !host.status().ok())
    return result(c, CaseOutcome::kFail,
                  "the reference failed: " + (want.ok() ? host.status() : want.status()).to_string());
  Result<std::vector<float>> got = c.run(device.ops(), device.op_context(), on_device);
  if (!got.ok() && got.status().code() == StatusCode::kUnsupported)
    return result(c, CaseOutcome::kSkipped, got.status().message());
  if (!got.ok()) return result(c, CaseOutcome::kFail, got.status().to_string());
  if (Status st = device.default_stream().synchronize(); !st.ok()) return result(c, CaseOutcome::kFail, st.to_string());
  if (!on_device.status().ok()) return result(c, CaseOutcome::kFail, on_device.status().to_string());
  return compare(c, *got, *want);
}

int OpCheckReport::count(CaseOutcome o) const {
  return static_cast<int>(
      std::count_if(cases.begin(), cases.end(), [o](const CaseResult& r) { return r.outcome == o; }));
}

OpCheckReport check_ops(hal::Device& device) {
  OpCheckReport report;
  for (const OpCase& c : op_cases()) report.cases.push_back(run_op_case(c, device));
  return report;
}

}  // namespace cai::doctor
