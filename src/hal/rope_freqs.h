// RoPE per-pair frequencies (plain, Llama-3 divisors, YaRN): the same host-side maths for every backend.
#pragma once

#include <vector>

#include "hal/op_table.h"

namespace cai::hal {

// How a model turns its rotary pairs: base frequency, optional per-pair divisors (Llama-3 / linear scaling, GGUF
// rope_freqs) and YaRN (type yarn when yarn_factor > 1, FORMATS.md §4.2).
struct RopeFreqConfig {
  int n_rot = 0;
  float freq_base = 10000.0f;
  std::vector<float> freq_divisors;  // n_rot/2 values, or empty
  float yarn_factor = 1.0f;
  int yarn_orig_ctx = 0;
  float yarn_beta_fast = 32.0f;
  float yarn_beta_slow = 1.0f;
};

// inv_freq[i] for pair i = 0 .. n_rot/2 - 1, angle(pos) = pos * inv_freq[i]: the `rope` op's table. FORMATS.md §4.
std::vector<float> rope_inv_freqs(const RopeFreqConfig& c);

}  // namespace cai::hal
