// Activation quantization (core/quant_act.h) on NEON: the same blocks, bit for bit, as the scalar
// quantize_act_row(_q16). The absmax is order-free and ignores NaN as std::fmax does (fmaxnm), x · (kMax / amax) is one
// rounded multiply, and fcvtns rounds to nearest, ties to even, as nearbyint does in the default rounding mode.
// Included by qdot_neon_table.h; internal linkage.
#pragma once

#include <arm_neon.h>

#include "core/quant_act.h"

namespace cai::hal::cpu {
namespace {

// One block's 32 values as int32 codes, round-half-even(v · kMax / absmax) (all 0 for an all-zero block); returns the
// absmax.
template <int kMax>
inline float block_codes_neon(const float* v, int32x4_t (&c)[8]) {
  float32x4_t x[8];
  for (int k = 0; k < 8; ++k) x[k] = vld1q_f32(v + 4 * k);
  float32x4_t m = vabsq_f32(x[0]);
  for (int k = 1; k < 8; ++k) m = vmaxnmq_f32(m, vabsq_f32(x[k]));
  const float amax = vmaxnmvq_f32(m);
  const float32x4_t inv = vdupq_n_f32(amax > 0.0f ? static_cast<float>(kMax) / amax : 0.0f);
  for (int k = 0; k < 8; ++k) c[k] = vcvtnq_s32_f32(vmulq_f32(x[k], inv));
  return amax;
}

void quantize_act_row_neon(const float* x, int64_t n, ActBlockQ8* out) {
  for (int64_t b = 0; b < n / kActBlock; ++b) {
    int32x4_t c[8];
    const float amax = block_codes_neon<127>(x + b * kActBlock, c);
    for (int h = 0; h < 2; ++h) {
      const int16x8_t lo = vcombine_s16(vqmovn_s32(c[4 * h]), vqmovn_s32(c[4 * h + 1]));
      const int16x8_t hi = vcombine_s16(vqmovn_s32(c[4 * h + 2]), vqmovn_s32(c[4 * h + 3]));
      vst1q_s8(out[b].q + 16 * h, vcombine_s8(vqmovn_s16(lo), vqmovn_s16(hi)));
    }
    out[b].d = amax / 127.0f;
    const auto half_sum = [&c](int h) {
      return vaddvq_s32(vaddq_s32(vaddq_s32(c[4 * h], c[4 * h + 1]), vaddq_s32(c[4 * h + 2], c[4 * h + 3])));
    };
    set_act_block_sums(out[b], half_sum(0), half_sum(1));
  }
}

void quantize_act_row_q16_neon(const float* x, int64_t n, ActBlockQ16* out, float* d) {
  for (int64_t b = 0; b < n / kActBlock; ++b) {
    int32x4_t c[8];
    d[b] = block_codes_neon<32767>(x + b * kActBlock, c) / 32767.0f;
    for (int k = 0; k < 4; ++k)
      vst1q_s16(out[b].q + 8 * k, vcombine_s16(vqmovn_s32(c[2 * k]), vqmovn_s32(c[2 * k + 1])));
  }
}

}  // namespace
}  // namespace cai::hal::cpu
