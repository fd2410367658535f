// The 16-row tiles (dot_wide) of the packed 32-element block layouts (Q4_0, IQ4_NL, and Q8_0 for 8-bit activations)
// with the int8 matrix-multiply instruction (smmla, ARMv8.6 i8mm): one smmla adds a 2 × 8 block of weight codes times
// an 8 × 2 block of activation codes into four int32 sums, 32 products where sdot makes 16.
//
// A block's 32 elements are four chunks of 8: chunk c is the code quads c and 4 + c of every row (for the 4-bit
// layouts the low and the high nibbles of one code quad). One zip of two registers of 4 rows' quads c and 4 + c gives
// two rows of a chunk, the smmla operand; the same zip of the activation tile's quads (ActWideBlock) gives two
// activation rows of it. A sum register holds weight rows 2p, 2p + 1 times activation rows 2q, 2q + 1 as
// [i0 j0, i0 j1, i1 j0, i1 j1]. Per block, 8 weight rows (all four chunks, 16 registers) meet 4 activation rows at a
// time (8 sum registers); each sum is the exact int32 of the one-row kernel, then gets its float multiply and fused
// multiply-add, so every output has the bits dot gives. The 256 float sums of the tile wait in L1 between blocks.
// Included by qdot_i8mm.cpp; internal linkage.
#pragma once

#include <arm_neon.h>

#include "hal/cpu/kernels/qdot_groups_simd.h"

namespace cai::hal::cpu {
namespace {

#if defined(__ARM_FEATURE_MATMUL_INT8)

// The two chunk halves (quad c and quad 4 + c) of 4 weight rows as signed bytes, for each layout: the nibble layouts
// read both from one code quad, Q8_0 from two. kOffset: the sums start at −kOffset · Σ a.q (Q4_0's unsigned codes).
struct WideQ4_0 {
  static constexpr bool kNibbles = true;
  static constexpr int kOffset = 8;
  static int8x16_t level(uint8x16_t nibbles) { return vreinterpretq_s8_u8(nibbles); }
};
struct WideIQ4 {
  static constexpr bool kNibbles = true;
  static constexpr int kOffset = 0;
  int8x16_t table;
  WideIQ4() : table(vld1q_s8(quant_grids::kIq4nlValues)) {}
  int8x16_t level(uint8x16_t nibbles) const { return vqtbl1q_s8(table, nibbles); }
};
struct WideQ8 {
  static constexpr bool kNibbles = false;
  static constexpr int kOffset = 0;
};

// Chunk c of weight rows 4k .. 4k + 3 of a block (`field`: the block's code field) as two smmla operands:
// rows 4k, 4k + 1 in w[0], rows 4k + 2, 4k + 3 in w[1].
template <class Codes>
[[gnu::always_inline]] inline void weight_chunk(const Codes& codes, const uint8_t* field, int c, int k,
                                                int8x16_t (&w)[2]) {
  const uint8_t* at = field + c * kGroupRows * 4 + 16 * k;
  int8x16_t lo, hi;
  if constexpr (Codes::kNibbles) {
    const uint8x16_t raw = vld1q_u8(at);
    lo = codes.level(vandq_u8(raw, vdupq_n_u8(0x0F)));
    hi = codes.level(vshrq_n_u8(raw, 4));
  } else {
    lo = vld1q_s8(reinterpret_cast<const int8_t*>(at));
    hi = vld1q_s8(reinterpret_cast<const int8_t*>(at + 4 * kGroupRows * 4));
  }
  const int32x4_t l = vreinterpretq_s32_s8(lo), h = vreinterpretq_s32_s8(hi);
  w[0] = vreinterpretq_s8_s32(vzip1q_s32(l, h));
  w[1] = vreinterpretq_s8_s32(vzip2q_s32(l, h));
}

// Lanes [v0, v1, v0, v1] of v (pair 0) or [v2, v3, v2, v3] (pair 1): two activation rows' values in sum-register order.
template <int kPair>
inline float32x4_t act_pair(float32x4_t v) {
  return vreinterpretq_f32_f64(vdupq_laneq_f64(vreinterpretq_f64_f32(v), kPair));
}
template <int kPair>
inline int32x4_t act_pair(int32x4_t v) {
  return vreinterpretq_s32_s64(vdupq_laneq_s64(vreinterpretq_s64_s32(v), kPair));
}

template <class Codes>
void block32_r16_dot_wide_i8mm(const uint8_t* w, const ActWideBlock* x, int64_t in, float* out) {
  constexpr int kBlock = kGroupRows * (Codes::kNibbles ? 18 : 34), kCodes = 2 * kGroupRows;
  const Codes codes{};
  // sums[p][q]: weight rows 2p, 2p + 1 times activation rows 2q, 2q + 1, in sum-register order.
  alignas(16) float sums[kGroupRows / 2][kWideDotRows / 2][4] = {};
  for (int64_t b = 0; b < in / kActBlock; ++b) {
    const ActWideBlock& a = x[b];
    const uint8_t* blk = w + b * kBlock;
    for (int at = 0; at < kBlock; at += 64) prefetch_ahead(blk + at);
    for (int wh = 0; wh < 2; ++wh) {  // weight rows 8wh .. 8wh + 7
      int8x16_t wc[4][4];             // [chunk][weight pair of the half]
      for (int c = 0; c < 4; ++c) {
        int8x16_t two[2];
        weight_chunk(codes, blk + kCodes, c, 2 * wh, two);
        wc[c][0] = two[0], wc[c][1] = two[1];
        weight_chunk(codes, blk + kCodes, c, 2 * wh + 1, two);
        wc[c][2] = two[0], wc[c][3] = two[1];
      }
      const float32x4_t dw4[2] = {vcvt_f32_f16(vreinterpret_f16_u8(vld1_u8(blk + 16 * wh))),
                                  vcvt_f32_f16(vreinterpret_f16_u8(vld1_u8(blk + 16 * wh + 8)))};
      // [d_i0, d_i0, d_i1, d_i1] of the half's weight pairs
      const float32x4_t dw[4] = {vzip1q_f32(dw4[0], dw4[0]), vzip2q_f32(dw4[0], dw4[0]), vzip1q_f32(dw4[1], dw4[1]),
                                 vzip2q_f32(dw4[1], dw4[1])};
      for (int ah = 0; ah < 4; ++ah) {  // activation rows 4ah .. 4ah + 3
        int32x4_t s[4][2];
        const int32x4_t start = vld1q_s32(a.neg8_sum + 4 * ah);
        for (int p = 0; p < 4; ++p) {
          if constexpr (Codes::kOffset == 8) {
            s[p][0] = act_pair<0>(start), s[p][1] = act_pair<1>(start);
          } else {
            s[p][0] = s[p][1] = vdupq_n_s32(0);
          }
        }
        for (int c = 0; c < 4; ++c) {
          const int32x4_t xl = vld1q_s32(reinterpret_cast<const int32_t*>(a.q[c][4 * ah]));
          const int32x4_t xh = vld1q_s32(reinterpret_cast<const int32_t*>(a.q[4 + c][4 * ah]));
          const int8x16_t xa[2] = {vreinterpretq_s8_s32(vzip1q_s32(xl, xh)), vreinterpretq_s8_s32(vzip2q_s32(xl, xh))};
          for (int p = 0; p < 4; ++p)
            for (int q = 0; q < 2; ++q) s[p][q] = vmmlaq_s32(s[p][q], wc[c][p], xa[q]);
        }
        const float32x4_t d4 = vld1q_f32(a.d + 4 * ah);
        const float32x4_t d[2] = {act_pair<0>(d4), act_pair<1>(d4)};
        for (int p = 0; p < 4; ++p) {
          for (int q = 0; q < 2; ++q) {
            float* acc = sums[4 * wh + p][2 * ah + q];
            vst1q_f32(acc, vfmaq_f32(vld1q_f32(acc), vcvtq_f32_s32(s[p][q]), vmulq_f32(dw[p], d[q])));
          }
        }
      }
    }
  }
  // sums[p][q] and sums[p + 1][q] hold weight rows 2p .. 2p + 3 of activation row 2q (even lanes) and 2q + 1 (odd).
  for (int q = 0; q < kWideDotRows / 2; ++q) {
    for (int p = 0; p < kGroupRows / 2; p += 2) {
      const float32x4_t u = vld1q_f32(sums[p][q]), v = vld1q_f32(sums[p + 1][q]);
      vst1q_f32(out + (2 * q) * kGroupRows + 2 * p, vuzp1q_f32(u, v));
      vst1q_f32(out + (2 * q + 1) * kGroupRows + 2 * p, vuzp2q_f32(u, v));
    }
  }
}

inline void register_qdot_wide_i8mm(QDotKernels& k) {
  k.dot_wide[static_cast<int>(DType::kQ4_0_R16)] = block32_r16_dot_wide_i8mm<WideQ4_0>;
  k.dot_wide[static_cast<int>(DType::kIQ4_NL_R16)] = block32_r16_dot_wide_i8mm<WideIQ4>;
  k.dot_wide[static_cast<int>(DType::kQ8_0_R16_I8)] = block32_r16_dot_wide_i8mm<WideQ8>;
}

#endif

}  // namespace
}  // namespace cai::hal::cpu
