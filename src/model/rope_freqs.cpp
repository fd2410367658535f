// RoPE frequency tables: base^(-2i/d), optional per-pair divisors, YaRN ramp between extrapolation and interpolation.
#include "model/rope_freqs.h"

#include <algorithm>
#include <cmath>

namespace cai {

namespace {

// Dimension index at which the wavelength makes `n_rot_turns` full turns over the original context.
double yarn_corr_dim(int n_rot, int orig_ctx, double n_rot_turns, double base) {
  return n_rot * std::log(orig_ctx / (n_rot_turns * 2.0 * M_PI)) / (2.0 * std::log(base));
}

}  // namespace

std::vector<float> rope_inv_freqs(const RopeFreqConfig& p) {
  const int n_pairs = p.n_rot / 2;
  std::vector<float> out(static_cast<size_t>(std::max(0, n_pairs)));
  const bool yarn = p.yarn_factor > 1.0f && p.yarn_orig_ctx > 0;
  double low = 0, high = 0;
  if (yarn) {
    low = std::max(0.0, std::floor(yarn_corr_dim(p.n_rot, p.yarn_orig_ctx, p.yarn_beta_fast, p.freq_base)));
    high = std::min(p.n_rot - 1.0, std::ceil(yarn_corr_dim(p.n_rot, p.yarn_orig_ctx, p.yarn_beta_slow, p.freq_base)));
  }
  for (int i = 0; i < n_pairs; ++i) {
    double f = std::pow(static_cast<double>(p.freq_base), -2.0 * i / p.n_rot);
    if (!p.freq_divisors.empty()) f /= p.freq_divisors[static_cast<size_t>(i)];
    if (yarn) {
      double ramp = std::clamp((i - low) / std::max(high - low, 0.001), 0.0, 1.0);
      double extrapolate = 1.0 - ramp;
      f = (f / p.yarn_factor) * (1.0 - extrapolate) + f * extrapolate;
    }
    out[static_cast<size_t>(i)] = static_cast<float>(f);
  }
  return out;
}

}  // namespace cai
