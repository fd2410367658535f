// RoPE per-pair frequencies (plain, Llama-3 divisors, YaRN): model maths, computed on the host at load into the table
// the `rope` op reads on every backend.
#pragma once

#include <vector>

namespace cai {

// How a model turns its rotary pairs: base frequency, optional per-pair divisors (Llama-3 / linear scaling, GGUF
// rope_freqs) and YaRN (type yarn when yarn_factor > 1; docs/design/formats.md#yarn).
struct RopeFreqConfig {
  int n_rot = 0;
  float freq_base = 10000.0f;
  std::vector<float> freq_divisors;  // n_rot/2 values, or empty
  float yarn_factor = 1.0f;
  int yarn_orig_ctx = 0;
  float yarn_beta_fast = 32.0f;
  float yarn_beta_slow = 1.0f;
};

// inv_freq[i] for pair i = 0 .. n_rot/2 - 1, angle(pos) = pos * inv_freq[i]: the `rope` op's table
// (docs/design/formats.md#rope).
std::vector<float> rope_inv_freqs(const RopeFreqConfig& c);

}  // namespace cai
