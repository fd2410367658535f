// The op table check: every op of the HAL on built-in random data, on one device against the scalar reference ops
// (ops/ref). `cai doctor` runs it on each device; the backend tests run it on every registered backend.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "core/status.h"
#include "doctor/case_tensors.h"
#include "hal/hal.h"

namespace cai::doctor {

// One case: the same inputs through an op table (the device's, then the reference's, each on its own copies, since
// ops may write their inputs) give the values compared. Random data comes from fixed seeds.
struct OpCase {
  std::string name;
  float tol = 0;  // a value passes when |got - want| ≤ tol · (1 + |want|)
  std::vector<hal::OpId> ops;
  DType weight = DType::kF32;  // the weight or table dtype the case's ops read (Device::supports(op, dtype))
  DType kv = DType::kF32;      // the KV cache dtype it writes and reads (Device::supports_kv_dtype)
  std::function<Result<std::vector<float>>(const hal::OpTable&, const hal::OpContext&, CaseTensors&)> run;
};
// Every op, every weight dtype with a kernel family, every KV cache dtype; decode- and prefill-shaped.
std::vector<OpCase> op_cases();

enum class CaseOutcome { kPass, kFail, kSkipped };
struct CaseResult {
  std::string name;
  CaseOutcome outcome = CaseOutcome::kPass;
  // Failed: where and by how much ("at 17 of 300: got 1.5, want 0.5 (allowed 2e-05)"), or the op's error. Skipped:
  // why (an op, dtype or KV dtype the device does not take).
  std::string detail;
  // Skipped for what the device says it lacks, in short ("rms_norm", "dense_gemm for q4_K", "q8_0 KV cache"); empty
  // when its op refused the inputs (unsupported) instead.
  std::string lacks;
  double worst = 0;  // the largest |got - want| / allowed over the values (≤ 1 passes)
};
// The case on `device` (host-visible or not) against the reference. A device op that answers unsupported skips it.
CaseResult run_op_case(const OpCase& c, hal::Device& device);

struct OpCheckReport {
  std::vector<CaseResult> cases;
  int count(CaseOutcome o) const;
};
OpCheckReport check_ops(hal::Device& device);

// Fixed-seed data for cases and tests: normal(0, scale) floats; rows × cols of them in dtype dt (F32 copied, others
// quantized); FP8 weight scales, one per 128 × 128 block (0.01, 0.02, ...).
std::vector<float> random_floats(size_t n, uint32_t seed, float scale = 1.0f);
std::vector<uint8_t> random_weight(DType dt, int64_t rows, int64_t cols, uint32_t seed, float scale = 1.0f);
std::vector<float> fp8_scales(int64_t rows, int64_t cols);

// Stacked experts [n_e, rows, cols] of one dtype (gate and up [n_e, ffn, hidden], down [n_e, hidden, ffn]) with their
// FP8 scales, for sparse_moe.
struct ExpertSet {
  std::vector<uint8_t> gate, up, down;
  std::vector<float> gate_s, up_s, down_s;
};
ExpertSet random_experts(DType dt, int n_e, int hidden, int ffn);

// The attention batch of `seqs` (n_seqs × {q_begin, n_q, pos0}: rows [q_begin, +n_q) at pos0) and their block tables
// (I32 [n_seqs, width]), on the tensors' device.
hal::AttnBatch attn_batch(CaseTensors& t, std::vector<int32_t>& seqs, std::vector<int32_t>& tables, int width);

}  // namespace cai::doctor
