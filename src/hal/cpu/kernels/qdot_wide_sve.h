// The 16-row tiles (dot_wide) of qdot_wide_i8mm.h on SVE registers, for the sve tables (qdot_sve_table.h): SVE's
// smmla works on every 128-bit segment of a register, so one instruction adds 2 · kSeg weight rows (a pair per
// segment) times one activation pair, broadcast to every segment: 64 products at 256 bits, 128 at 512, where NEON's
// makes 32. The operands are built as in qdot_wide_i8mm.h (chunk c of a block: code quads c and 4 + c, two rows per
// segment), the sums and their float multiply and fused multiply-add are the one-row kernel's, so every output has the
// bits dot gives. Included by qdot_sve_table.h; internal linkage.
#pragma once

#include <arm_sve.h>

#include "hal/cpu/kernels/qdot_wide_i8mm.h"

namespace cai::hal::cpu {
namespace {

#if defined(__ARM_FEATURE_SVE_MATMUL_INT8) && defined(__ARM_FEATURE_SVE_BITS)

typedef svint32_t SveWideI32 __attribute__((arm_sve_vector_bits(__ARM_FEATURE_SVE_BITS)));
typedef svint8_t SveWideI8 __attribute__((arm_sve_vector_bits(__ARM_FEATURE_SVE_BITS)));
typedef svfloat32_t SveWideF32 __attribute__((arm_sve_vector_bits(__ARM_FEATURE_SVE_BITS)));

constexpr int kSeg = __ARM_FEATURE_SVE_BITS / 128;  // 128-bit segments a register holds: weight pairs per operand
constexpr int kLoadRows = 4 * kSeg;                 // rows of one register of code quads (or of 32-bit scales)
constexpr int kWideRegs = kGroupRows / (2 * kSeg);  // weight operands per chunk: 4 at 256 bits, 2 at 512

// The layouts' code levels as SVE bytes (qdot_wide_i8mm.h's WideQ4_0 / WideIQ4 / WideQ8).
template <class Codes>
struct SveLevels;
template <>
struct SveLevels<WideQ4_0> {
  [[gnu::always_inline]] svint8_t operator()(svuint8_t nibbles) const { return svreinterpret_s8_u8(nibbles); }
};
template <>
struct SveLevels<WideIQ4> {
  SveWideI8 table = svld1rq_s8(svptrue_b8(), quant_grids::kIq4nlValues);
  [[gnu::always_inline]] svint8_t operator()(svuint8_t nibbles) const { return svtbl_s8(table, nibbles); }
};
template <>
struct SveLevels<WideQ8> {};

// [v0, v1, v0, v1] of the 4 values at p (pair 0) or [v2, v3, v2, v3] (pair 1), in every segment.
template <int kPair>
[[gnu::always_inline]] inline svint32_t pair_in_segments(const int32_t* p) {
  const svint64_t v = svreinterpret_s64_s32(svld1rq_s32(svptrue_b8(), p));
  return svreinterpret_s32_s64(kPair == 0 ? svtrn1_s64(v, v) : svtrn2_s64(v, v));
}

template <class Codes>
void block32_r16_dot_wide_sve(const uint8_t* w, const ActWideBlock* x, int64_t in, float* out) {
  constexpr int kBlock = kGroupRows * (Codes::kNibbles ? 18 : 34), kCodes = 2 * kGroupRows;
  const svbool_t all = svptrue_b8();
  const SveLevels<Codes> levels{};
  // sums[r][p]: weight operand r times activation pair p, in smmla's order per segment.
  alignas(64) float sums[kWideRegs][kWideDotRows / 2][4 * kSeg] = {};
  for (int64_t b = 0; b < in / kActBlock; ++b) {
    const ActWideBlock& a = x[b];
    const uint8_t* blk = w + b * kBlock;
    for (int at = 0; at < kBlock; at += 64) prefetch_ahead(blk + at);
    SveWideI8 wc[4][kWideRegs];  // [chunk][operand]
    for (int c = 0; c < 4; ++c) {
      for (int k = 0; k < kGroupRows / kLoadRows; ++k) {
        const uint8_t* q = blk + kCodes + c * kGroupRows * 4 + 4 * kLoadRows * k;
        svint8_t lo, hi;
        if constexpr (Codes::kNibbles) {
          const svuint8_t raw = svld1_u8(all, q);
          lo = levels(svand_n_u8_x(all, raw, 0x0F));
          hi = levels(svlsr_n_u8_x(all, raw, 4));
        } else {
          lo = svld1_s8(all, reinterpret_cast<const int8_t*>(q));
          hi = svld1_s8(all, reinterpret_cast<const int8_t*>(q + 4 * kGroupRows * 4));
        }
        const svint32_t l = svreinterpret_s32_s8(lo), h = svreinterpret_s32_s8(hi);
        wc[c][2 * k] = svreinterpret_s8_s32(svzip1_s32(l, h));
        wc[c][2 * k + 1] = svreinterpret_s8_s32(svzip2_s32(l, h));
      }
    }
    // [d_i0, d_i0, d_i1, d_i1] per segment, for each operand's rows
    SveWideF32 dw[kWideRegs];
    for (int k = 0; k < kGroupRows / kLoadRows; ++k) {
      const svuint32_t h = svld1uh_u32(all, reinterpret_cast<const uint16_t*>(blk) + kLoadRows * k);
      const svfloat32_t d = svcvt_f32_f16_x(all, svreinterpret_f16_u32(h));
      dw[2 * k] = svzip1_f32(d, d);
      dw[2 * k + 1] = svzip2_f32(d, d);
    }
    for (int ah = 0; ah < 4; ++ah) {  // activation rows 4ah .. 4ah + 3: pairs 2ah, 2ah + 1
      SveWideI32 s[kWideRegs][2];
      for (int r = 0; r < kWideRegs; ++r) {
        if constexpr (Codes::kOffset == 8) {
          s[r][0] = pair_in_segments<0>(a.neg8_sum + 4 * ah);
          s[r][1] = pair_in_segments<1>(a.neg8_sum + 4 * ah);
        } else {
          s[r][0] = s[r][1] = svdup_n_s32(0);
        }
      }
      const svbool_t four = svwhilelt_b32(0, 4);
      for (int c = 0; c < 4; ++c) {
        const svint32_t xl = svld1_s32(four, reinterpret_cast<const int32_t*>(a.q[c][4 * ah]));
        const svint32_t xh = svld1_s32(four, reinterpret_cast<const int32_t*>(a.q[4 + c][4 * ah]));
        const svint32_t z = svzip1_s32(xl, xh);  // segment 0: rows 4ah, 4ah + 1; segment 1: 4ah + 2, 4ah + 3
        const SveWideI8 xa[2] = {svreinterpret_s8_s32(svdupq_lane_s32(z, 0)),
                                 svreinterpret_s8_s32(svdupq_lane_s32(z, 1))};
        for (int r = 0; r < kWideRegs; ++r)
          for (int p = 0; p < 2; ++p) s[r][p] = svmmla_s32(s[r][p], wc[c][r], xa[p]);
      }
      const svfloat32_t d4 = svld1rq_f32(all, a.d + 4 * ah);
      const svfloat64_t d64 = svreinterpret_f64_f32(d4);
      const SveWideF32 d[2] = {svreinterpret_f32_f64(svtrn1_f64(d64, d64)),
                               svreinterpret_f32_f64(svtrn2_f64(d64, d64))};
      for (int r = 0; r < kWideRegs; ++r) {
        for (int p = 0; p < 2; ++p) {
          float* acc = sums[r][2 * ah + p];
          const svfloat32_t prod = svmul_f32_x(all, dw[r], d[p]);
          svst1_f32(all, acc, svmla_f32_x(all, svld1_f32(all, acc), svcvt_f32_s32_x(all, s[r][p]), prod));
        }
      }
    }
  }
  // Segment g of operand r holds weight rows 2(kSeg·r + g), + 1 times activation rows 2p, 2p + 1 as
  // [i0 j0, i0 j1, i1 j0, i1 j1].
  for (int r = 0; r < kWideRegs; ++r)
    for (int p = 0; p < kWideDotRows / 2; ++p)
      for (int g = 0; g < kSeg; ++g)
        for (int i = 0; i < 2; ++i)
          for (int j = 0; j < 2; ++j)
            out[(2 * p + j) * kGroupRows + 2 * (kSeg * r + g) + i] = sums[r][p][4 * g + 2 * i + j];
}

inline void register_qdot_wide_sve(QDotKernels& k) {
  k.dot_wide[static_cast<int>(DType::kQ4_0_R16)] = block32_r16_dot_wide_sve<WideQ4_0>;
  k.dot_wide[static_cast<int>(DType::kIQ4_NL_R16)] = block32_r16_dot_wide_sve<WideIQ4>;
  k.dot_wide[static_cast<int>(DType::kQ8_0_R16_I8)] = block32_r16_dot_wide_sve<WideQ8>;
}

#endif

}  // namespace
}  // namespace cai::hal::cpu
