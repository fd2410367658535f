// e^x for loops over many values (the CPU's softmax and SiLU, the sampler's weights), branch-free so a loop of it
// vectorises in any build: scalar expf is a libm call per element, which shows in the profile of a prefill (softmax
// and SwiGLU; `cai bench` on Qwen2-1.5B's shape).
// Cody–Waite reduction x = k·ln 2 + r, |r| ≤ ln 2 / 2, a degree-7 polynomial for e^r (the classic single-precision
// coefficients: within 1 ulp of e^x where the result is a normal float, 8e-8 relative at worst, tested), times 2^k
// built in the exponent bits. Where 2^k leaves the normal floats it is 0 (x below about −87.3) or +inf (above about
// 88.4); NaN stays NaN. Those cases are integer masks: GCC will not if-convert float compares (they may trap), and a
// loop with a branch does not vectorise.
#pragma once

#include <algorithm>
#include <bit>
#include <cstdint>

namespace cai {

inline float exp_poly(float x) {
  constexpr float kLog2e = 1.44269504088896341f, kLn2Hi = 0.693359375f, kLn2Lo = -2.12194440e-4f;
  constexpr float kRound = 12582912.0f;  // 1.5 · 2^23: adding it rounds to an integer held in the low mantissa bits
  const float shifted = x * kLog2e + kRound;
  const float k_float = shifted - kRound;
  const float r = (x - k_float * kLn2Hi) - k_float * kLn2Lo;
  float p = 1.9875691500e-4f;
  p = p * r + 1.3981999507e-3f;
  p = p * r + 8.3334519073e-3f;
  p = p * r + 4.1665795894e-2f;
  p = p * r + 1.6666665459e-1f;
  p = p * r + 5.0000001201e-1f;
  const float er = p * (r * r) + r + 1.0f;
  const int32_t k = std::bit_cast<int32_t>(shifted) - std::bit_cast<int32_t>(kRound);
  const int32_t two_k = (std::clamp(k, -126, 127) + 127) << 23;
  const int32_t bits = std::bit_cast<int32_t>(er * std::bit_cast<float>(two_k));
  // All-ones masks from sign bits (arithmetic shifts), not selects: GCC sinks the float work under a select's branch.
  const int32_t x_bits = std::bit_cast<int32_t>(x);
  const int32_t under = (k + 126) >> 31, over = (127 - k) >> 31;
  const int32_t nan = (0x7F800000 - (x_bits & 0x7FFFFFFF)) >> 31;
  const int32_t finite_bits = (bits & ~(under | over)) | (0x7F800000 & over);
  return std::bit_cast<float>((finite_bits & ~nan) | (x_bits & nan));
}

}  // namespace cai
