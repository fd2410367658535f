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
  // −8 · (sum[0] + sum[1]): where the integer sum of a block of unsigned 4-bit codes (Q4_0's value + 8) starts, so the
  // group kernels broadcast it from memory (a load) where they computed and broadcast it per row and block.
  int32_t neg8_sum;
  // −32 · sum[h]: where the integer sum of a 16-element half of 6-bit codes (Q6_K's value + 32) starts, broadcast from
  // memory for the same reason (from a general register each broadcast takes two vector operations).
  int32_t neg32_sum[2];
};
static_assert(sizeof(ActBlockQ8) == 56);

// Sets the block's sums and the terms derived from them (its d set): s0 = Σ q over elements 0..15, s1 over 16..31.
inline void set_act_block_sums(ActBlockQ8& a, int s0, int s1) {
  a.sum[0] = static_cast<int16_t>(s0);
  a.sum[1] = static_cast<int16_t>(s1);
  a.neg_d_sum = -(a.d * static_cast<float>(s0 + s1));
  a.neg8_sum = -8 * (s0 + s1);
  a.neg32_sum[0] = -32 * s0;
  a.neg32_sum[1] = -32 * s1;
}

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
