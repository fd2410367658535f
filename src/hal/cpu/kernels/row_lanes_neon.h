// RowLanes and B16 for ARM64: the vector operations the group kernels of qdot_groups_simd.h are written against, a
// group's 16 rows as four 128-bit registers of 4. The int8 product of 4 adjacent bytes per lane is sdot where the
// including file is compiled with dotprod (armv8.2-a+dotprod), else smull + pairwise adds (plain NEON, which every
// ARM64 CPU has); both exact, so every table gives the scalar kernels' bits. Included by qdot_groups_simd.h; internal
// linkage.
#pragma once

#include <arm_neon.h>

#include "core/block_bytes.h"
#include "hal/cpu/kernels/b16_neon.h"

namespace cai::hal::cpu {
namespace {

using block_bytes::load_i32;

// Per int32 lane: acc + Σ of 4 adjacent s8 × s8 products (a byte that stands for an unsigned code is below 128).
inline int32x4_t dot4_s8(int32x4_t acc, int32x4_t a, int32x4_t b) {
  const int8x16_t x = vreinterpretq_s8_s32(a), y = vreinterpretq_s8_s32(b);
#if defined(__ARM_FEATURE_DOTPROD)
  return vdotq_s32(acc, x, y);
#else
  // Each int16 pair sum is at most 2 · 128 · 127, within int16.
  const int16x8_t lo = vmull_s8(vget_low_s8(x), vget_low_s8(y)), hi = vmull_high_s8(x, y);
  return vpadalq_s16(acc, vpaddq_s16(lo, hi));
#endif
}

// The rows of a group one vector holds, and the operations the group kernels need on them: all 16, as four 128-bit
// registers of 4 rows (so one broadcast activation quad feeds the whole group, as on AVX-512; NEON has 32 registers).
// A field of U bytes per row (qdot_groups.h) gives the rows from p on.
struct RowLanes {
  static constexpr int kRows = 16;
  static constexpr bool kPairs = false;  // two groups' chains would not fit the registers
  struct I {
    int32x4_t v[4];
  };
  struct F {
    float32x4_t v[4];
  };
  template <class Fn>
  [[gnu::always_inline]] static I each(Fn fn) {
    return {{fn(0), fn(1), fn(2), fn(3)}};
  }
  template <class Fn>
  [[gnu::always_inline]] static F each_f(Fn fn) {
    return {{fn(0), fn(1), fn(2), fn(3)}};
  }
  static I zero() {
    return each([](int) { return vdupq_n_s32(0); });
  }
  static F fzero() {
    return each_f([](int) { return vdupq_n_f32(0.0f); });
  }
  static I quads(const uint8_t* p) {  // 4 bytes per row
    return each([p](int k) { return vreinterpretq_s32_u8(vld1q_u8(p + 16 * k)); });
  }
  static I pairs_i16(const uint8_t* p) {  // 2 int8 per row, widened to int16
    return each(
        [p](int k) { return vreinterpretq_s32_s16(vmovl_s8(vld1_s8(reinterpret_cast<const int8_t*>(p) + 8 * k))); });
  }
  static I bytes_i8(const uint8_t* p) {
    const int8x16_t b = vld1q_s8(reinterpret_cast<const int8_t*>(p));
    const int16x8_t lo = vmovl_s8(vget_low_s8(b)), hi = vmovl_high_s8(b);
    return {{vmovl_s16(vget_low_s16(lo)), vmovl_high_s16(lo), vmovl_s16(vget_low_s16(hi)), vmovl_high_s16(hi)}};
  }
  static I bytes_u8(const uint8_t* p) {
    const uint8x16_t b = vld1q_u8(p);
    const uint16x8_t lo = vmovl_u8(vget_low_u8(b)), hi = vmovl_high_u8(b);
    return {{vreinterpretq_s32_u32(vmovl_u16(vget_low_u16(lo))), vreinterpretq_s32_u32(vmovl_high_u16(lo)),
             vreinterpretq_s32_u32(vmovl_u16(vget_low_u16(hi))), vreinterpretq_s32_u32(vmovl_high_u16(hi))}};
  }
  static F f16(const uint8_t* p) {
    const float16x8_t lo = vreinterpretq_f16_u16(vld1q_u16(reinterpret_cast<const uint16_t*>(p)));
    const float16x8_t hi = vreinterpretq_f16_u16(vld1q_u16(reinterpret_cast<const uint16_t*>(p) + 8));
    return {
        {vcvt_f32_f16(vget_low_f16(lo)), vcvt_high_f32_f16(lo), vcvt_f32_f16(vget_low_f16(hi)), vcvt_high_f32_f16(hi)}};
  }
  static I set1(int32_t v) {
    const int32x4_t r = vdupq_n_s32(v);
    return {{r, r, r, r}};
  }
  static F fset1(float v) {
    const float32x4_t r = vdupq_n_f32(v);
    return {{r, r, r, r}};
  }
  static I and8(I v, int m) {
    const uint8x16_t mask = vdupq_n_u8(static_cast<uint8_t>(m));
    return each([&](int k) { return vreinterpretq_s32_u8(vandq_u8(vreinterpretq_u8_s32(v.v[k]), mask)); });
  }
  // Bits 4..7 of each byte: one shift of bytes (the generic form shifts 16-bit lanes and masks).
  static I high_nibbles(I v) {
    return each([&](int k) { return vreinterpretq_s32_u8(vshrq_n_u8(vreinterpretq_u8_s32(v.v[k]), 4)); });
  }
  static I or_(I a, I b) {
    return each([&](int k) { return vorrq_s32(a.v[k], b.v[k]); });
  }
  template <int N>
  static I srl16(I v) {
    if constexpr (N == 0)
      return v;
    else
      return each([&](int k) { return vreinterpretq_s32_u16(vshrq_n_u16(vreinterpretq_u16_s32(v.v[k]), N)); });
  }
  template <int N>
  static I sll16(I v) {
    return each([&](int k) { return vreinterpretq_s32_u16(vshlq_n_u16(vreinterpretq_u16_s32(v.v[k]), N)); });
  }
  static I srl16(I v, int n) {
    const int16x8_t by = vdupq_n_s16(static_cast<int16_t>(-n));
    return each([&](int k) { return vreinterpretq_s32_u16(vshlq_u16(vreinterpretq_u16_s32(v.v[k]), by)); });
  }
  static I sll16(I v, int n) {
    const int16x8_t by = vdupq_n_s16(static_cast<int16_t>(n));
    return each([&](int k) { return vreinterpretq_s32_u16(vshlq_u16(vreinterpretq_u16_s32(v.v[k]), by)); });
  }
  static I add(I a, I b) {
    return each([&](int k) { return vaddq_s32(a.v[k], b.v[k]); });
  }
  static I mullo(I a, I b) {
    return each([&](int k) { return vmulq_s32(a.v[k], b.v[k]); });
  }
  static I dot_u8s8(I acc, I u, I s) {
    return each([&](int k) { return dot4_s8(acc.v[k], u.v[k], s.v[k]); });
  }
  // Per int32 lane: acc + the products of its 2 int16 with the 2 of x's same lane.
  static int32x4_t dot_s16_quarter(int32x4_t acc, int32x4_t w, int32x4_t x) {
    const int16x8_t a = vreinterpretq_s16_s32(w), b = vreinterpretq_s16_s32(x);
    return vaddq_s32(acc, vpaddq_s32(vmull_s16(vget_low_s16(a), vget_low_s16(b)), vmull_high_s16(a, b)));
  }
  // The activation quad (or int16 pair) at p, broadcast once for the 16 rows.
  static I dot_u8s8_at(I acc, I u, const int8_t* p) {
    const int32x4_t x = vdupq_n_s32(load_i32(p));
    return each([&](int k) { return dot4_s8(acc.v[k], u.v[k], x); });
  }
  static I dot_s16_at(I acc, I w, const int16_t* p) {
    const int32x4_t x = vdupq_n_s32(load_i32(p));
    return each([&](int k) { return dot_s16_quarter(acc.v[k], w.v[k], x); });
  }
  // A block's int16 pair products with the pair's two products still apart (smlal / smlal2: register 2k holds rows
  // 4k, 4k + 1, register 2k + 1 rows 4k + 2, 4k + 3, two lanes each), added per row once at the block's end
  // (pair_total): half the instructions of adding each pair. Its 8 registers a row fit for up to kPairSumRows
  // activation rows; more take I and dot_s16_at.
  struct PairSums {
    int32x4_t v[8];
  };
  static constexpr int kPairSumRows = 2;
  static PairSums dot_s16_at(PairSums acc, I w, const int16_t* p) {
    const int16x8_t x = vreinterpretq_s16_s32(vdupq_n_s32(load_i32(p)));
    for (int k = 0; k < 4; ++k) {
      const int16x8_t wk = vreinterpretq_s16_s32(w.v[k]);
      acc.v[2 * k] = vmlal_s16(acc.v[2 * k], vget_low_s16(wk), vget_low_s16(x));
      acc.v[2 * k + 1] = vmlal_high_s16(acc.v[2 * k + 1], wk, x);
    }
    return acc;
  }
  static I pair_total(PairSums s) {
    return each([&](int k) { return vpaddq_s32(s.v[2 * k], s.v[2 * k + 1]); });
  }
  static I pair_total(I s) { return s; }
  // Table levels (IQ4) stay signed: the product is signed × signed.
  static constexpr int kLevelBias = 0;
  static I table16(const uint8_t* t) {
    const int32x4_t r = vreinterpretq_s32_u8(vld1q_u8(t));
    return {{r, r, r, r}};
  }
  static I lookup(I table, I index) {
    return each([&](int k) {
      return vreinterpretq_s32_u8(vqtbl1q_u8(vreinterpretq_u8_s32(table.v[k]), vreinterpretq_u8_s32(index.v[k])));
    });
  }
  static I signed_level(I codes) { return codes; }
  static I dot_level(I acc, I level, I x) { return dot_u8s8(acc, level, x); }
  static I dot_level_at(I acc, I level, const int8_t* p) { return dot_u8s8_at(acc, level, p); }
  static F cvt(I v) {
    return each_f([&](int k) { return vcvtq_f32_s32(v.v[k]); });
  }
  static F mul(F a, F b) {
    return each_f([&](int k) { return vmulq_f32(a.v[k], b.v[k]); });
  }
  static F fma(F a, F b, F c) {
    return each_f([&](int k) { return vfmaq_f32(c.v[k], a.v[k], b.v[k]); });
  }
  static void store(float* p, F v) {
    for (int k = 0; k < 4; ++k) vst1q_f32(p + 4 * k, v.v[k]);
  }
};

}  // namespace
}  // namespace cai::hal::cpu
