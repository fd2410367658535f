// The elementwise loops that carry exp_poly (SwiGLU's gate, softmax), written once as plain loops the compiler
// vectorises at the including file's width: elementwise_avx2.cpp and elementwise_avx512.cpp build them for their ISA,
// gemm_scalar.cpp for the baseline (GemmKernels::silu_mul, softmax_row). The two ISA files are built with
// -ffp-contract=off (CMakeLists.txt; x86-64's baseline has no fused multiply-add to contract into) and each loop keeps
// its adds in a fixed order, so every width gives the same bits.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>

#include "core/exp_poly.h"

namespace cai::hal::cpu {

// out[i] = silu(gate[i]) · up[i].
inline void silu_mul_loop(const float* gate, const float* up, float* out, int64_t n) {
  for (int64_t i = 0; i < n; ++i) out[i] = gate[i] / (1.0f + exp_poly(-gate[i])) * up[i];
}

// x = softmax(x) over n values: e^(x − max) with max over the values that are not NaN, divided by their sum taken as
// four double sums (elements i ≡ 0..3 (mod 4)) added in one fixed order.
inline void softmax_row_loop(float* x, int64_t n) {
  // 16 partial maxima in one GCC vector (the compiler splits it to the ISA's registers; it does not vectorise the
  // array form): the same largest value whatever their number, and no chain of dependent compares. v > m ? v : m keeps
  // m for a NaN v, as std::max(m, v) does.
  using Lanes = float __attribute__((vector_size(64)));
  constexpr int kLanes = sizeof(Lanes) / sizeof(float);
  Lanes lane_max;
  for (int l = 0; l < kLanes; ++l) lane_max[l] = -INFINITY;
  int64_t i = 0;
  for (; i + kLanes <= n; i += kLanes) {
    Lanes v;
    std::memcpy(&v, x + i, sizeof v);
    lane_max = v > lane_max ? v : lane_max;
  }
  float mx = -INFINITY;
  for (int l = 0; l < kLanes; ++l) mx = std::max(mx, lane_max[l]);
  for (; i < n; ++i) mx = std::max(mx, x[i]);
  for (int64_t k = 0; k < n; ++k) x[k] = exp_poly(x[k] - mx);
  double part[4] = {};
  i = 0;
  for (; i + 4 <= n; i += 4)
    for (int l = 0; l < 4; ++l) part[l] += x[i + l];
  for (; i < n; ++i) part[i % 4] += x[i];
  const float inv = static_cast<float>(1.0 / ((part[0] + part[1]) + (part[2] + part[3])));
  for (int64_t k = 0; k < n; ++k) x[k] *= inv;
}

}  // namespace cai::hal::cpu
