// Activations quantized for integer dot products (--precision fast): every 32 consecutive values of an activation row
// become one ActBlockQ8, value ≈ d · q with q in [-127, 127] (for Q8_0 weights one ActBlockQ16, q in [-32767, 32767]).
// Weight kernels (hal/cpu/kernels/qdot_kernels.h) multiply their integer codes by q in int8 × int8 → int32 (int16 ×
// int16 for ActBlockQ16) and apply the float scales once per block.
#pragma once

#include <cstdint>

namespace cai {

inline constexpr int kActBlock = 32;

struct ActBlockQ8 {
  float d;         // scale: amax / 127 of the 32 values (0 when all are 0)
  int16_t sum[2];  // Σ q over elements 0..15 and 16..31: the offset terms of weights with unsigned codes
  int8_t q[kActBlock];
  float neg_d_sum;  // −(d · (sum[0] + sum[1])) in float: the factor of the mins of Q4_K / Q5_K weights, once per block
};
static_assert(sizeof(ActBlockQ8) == 44);

// ActBlockQ8::neg_d_sum of a block whose d and sum are set.
inline float act_neg_d_sum(const ActBlockQ8& a) { return -(a.d * static_cast<float>(a.sum[0] + a.sum[1])); }

// Quantizes n values (a multiple of kActBlock) into n / kActBlock blocks: d = amax / 127, q = round-half-even(x / d).
void quantize_act_row(const float* x, int64_t n, ActBlockQ8* out);

// The 16-bit form, for weights whose codes are as precise as int8 activations (Q8_0): there int8 activations would
// double the error of the product and flip next-token choices of small models, 16 bits keep it at the weights' own.
// Codes and scales lie apart (a row's ActBlockQ16s, and its floats), so each block's codes fill one cache line.
struct alignas(64) ActBlockQ16 {
  int16_t q[kActBlock];
};
static_assert(sizeof(ActBlockQ16) == 64);

// As quantize_act_row with d[b] = amax / 32767 of block b (0 when all are 0) and q in [-32767, 32767].
void quantize_act_row_q16(const float* x, int64_t n, ActBlockQ16* out, float* d);

}  // namespace cai
