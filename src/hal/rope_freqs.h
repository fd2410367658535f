// RoPE per-pair frequencies (plain, Llama-3 divisors, YaRN): the same host-side maths for every backend.
#pragma once

#include <vector>

#include "hal/op_table.h"

namespace cai::hal {

// inv_freq[i] for pair i = 0 .. n_rot/2 - 1, angle(pos) = pos * inv_freq[i]. FORMATS.md §4.
std::vector<float> rope_inv_freqs(const RopeParams& p);

}  // namespace cai::hal
