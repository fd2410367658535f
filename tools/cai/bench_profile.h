// `cai bench --save-profile FILE`: the efficiency this run achieved, as the planner counts it, recorded in a copy of
// the chip's profile (docs/chips.md#measured-efficiency).
#pragma once

#include <string>

#include "core/status.h"

namespace cai::cli {

struct BenchMeasurement {
  std::string model;         // the file or directory benchmarked
  std::string profile;       // --profile: the device's profile id; "" = this host's CPU profile (CPU runs only)
  bool host = false;         // the weights live in host memory (the CPU backend)
  int threads = 0;           // CPU: the threads the run used (0 = all)
  double bandwidth_gbs = 0;  // the read bandwidth the run measured (the CPU's roofline)
  int n_prompt = 0, n_gen = 0;
  double pp_tokens_per_s = 0, tg_tokens_per_s = 0;
  std::string machine;  // what it ran on, for the source line
};

// Plans the benchmarked model on one card of the chip with the planner's default efficiencies at this run's context,
// and scales each default by measured ÷ predicted speed: decode from the generation rate, prefill from the prompt
// rate. Writes the chip's profile to `out` with that entry (backend, the model's main weight type, threads) added or
// replaced, and prints it; an existing `out` is the profile updated. Errors: a device run without --profile, a
// profile without bandwidth, no tokens timed.
Status save_measured_profile(const BenchMeasurement& m, const std::string& out);

}  // namespace cai::cli
