// RowLanes and B16 for ARM64: the vector operations the group kernels of qdot_groups_simd.h are written against, four
// 128-bit quarters of 4 rows per group. The int8 product of 4 adjacent bytes per lane is sdot where the including file
// is compiled with dotprod (armv8.2-a+dotprod), else smull + pairwise adds (plain NEON, which every ARM64 CPU has);
// both exact, so every table gives the scalar kernels' bits. Included by qdot_groups_simd.h; internal linkage.
#pragma once

#include <arm_neon.h>

#include "core/block_bytes.h"

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

// The rows of a group one vector holds, and the operations the group kernels need on them. A field of U bytes per
// row (qdot_groups.h) gives the vector's rows from p + (first row) · U on.
struct RowLanes {
  static constexpr int kRows = 4;
  using I = int32x4_t;
  using F = float32x4_t;
  static I zero() { return vdupq_n_s32(0); }
  static F fzero() { return vdupq_n_f32(0.0f); }
  static I quads(const uint8_t* p) { return vreinterpretq_s32_u8(vld1q_u8(p)); }  // 4 bytes per row
  static I pairs_i16(const uint8_t* p) {                                          // 2 int8 per row, widened to int16
    return vreinterpretq_s32_s16(vmovl_s8(vld1_s8(reinterpret_cast<const int8_t*>(p))));
  }
  static I bytes_i8(const uint8_t* p) {
    const int8x8_t b = vreinterpret_s8_s32(vdup_n_s32(load_i32(p)));
    return vmovl_s16(vget_low_s16(vmovl_s8(b)));
  }
  static I bytes_u8(const uint8_t* p) {
    const uint8x8_t b = vreinterpret_u8_s32(vdup_n_s32(load_i32(p)));
    return vreinterpretq_s32_u32(vmovl_u16(vget_low_u16(vmovl_u8(b))));
  }
  static F f16(const uint8_t* p) {
    return vcvt_f32_f16(vreinterpret_f16_u16(vld1_u16(reinterpret_cast<const uint16_t*>(p))));
  }
  static I set1(int32_t v) { return vdupq_n_s32(v); }
  static F fset1(float v) { return vdupq_n_f32(v); }
  static F fload(const float* p) { return vld1q_f32(p); }
  static I and8(I v, int m) {
    return vreinterpretq_s32_u8(vandq_u8(vreinterpretq_u8_s32(v), vdupq_n_u8(static_cast<uint8_t>(m))));
  }
  static I or_(I a, I b) { return vorrq_s32(a, b); }
  template <int N>
  static I srl16(I v) {
    if constexpr (N == 0)
      return v;
    else
      return vreinterpretq_s32_u16(vshrq_n_u16(vreinterpretq_u16_s32(v), N));
  }
  template <int N>
  static I sll16(I v) {
    return vreinterpretq_s32_u16(vshlq_n_u16(vreinterpretq_u16_s32(v), N));
  }
  static I srl16(I v, int n) {
    return vreinterpretq_s32_u16(vshlq_u16(vreinterpretq_u16_s32(v), vdupq_n_s16(static_cast<int16_t>(-n))));
  }
  static I sll16(I v, int n) {
    return vreinterpretq_s32_u16(vshlq_u16(vreinterpretq_u16_s32(v), vdupq_n_s16(static_cast<int16_t>(n))));
  }
  static I add(I a, I b) { return vaddq_s32(a, b); }
  static I sub(I a, I b) { return vsubq_s32(a, b); }
  static I mullo(I a, I b) { return vmulq_s32(a, b); }
  static I dot_u8s8(I acc, I u, I s) { return dot4_s8(acc, u, s); }
  // Per int32 lane: acc + the products of its 2 int16 with the 2 of x's same lane.
  static I dot_s16(I acc, I w, I x) {
    const int16x8_t a = vreinterpretq_s16_s32(w), b = vreinterpretq_s16_s32(x);
    return vaddq_s32(acc, vpaddq_s32(vmull_s16(vget_low_s16(a), vget_low_s16(b)), vmull_high_s16(a, b)));
  }
  static I dot_u8s8_at(I acc, I u, const int8_t* p) { return dot_u8s8(acc, u, set1(load_i32(p))); }
  static I dot_s16_at(I acc, I w, const int16_t* p) { return dot_s16(acc, w, set1(load_i32(p))); }
  // Table levels (IQ4) stay signed: the product is signed × signed.
  static constexpr int kLevelBias = 0;
  static I table16(const uint8_t* t) { return vreinterpretq_s32_u8(vld1q_u8(t)); }
  static I lookup(I table, I index) {
    return vreinterpretq_s32_u8(vqtbl1q_u8(vreinterpretq_u8_s32(table), vreinterpretq_u8_s32(index)));
  }
  static I signed_level(I codes) { return codes; }
  static I dot_level(I acc, I level, I x) { return dot4_s8(acc, level, x); }
  static I dot_level_at(I acc, I level, const int8_t* p) { return dot_level(acc, level, set1(load_i32(p))); }
  static F cvt(I v) { return vcvtq_f32_s32(v); }
  static F mul(F a, F b) { return vmulq_f32(a, b); }
  static F fma(F a, F b, F c) { return vfmaq_f32(c, a, b); }
  static void store(float* p, F v) { vst1q_f32(p, v); }
};

// 16 bytes (one per row of a group), for unpacking the K-quant scales of a group: shifts move 16-bit lanes, as on
// x86-64, and every caller masks the bits it keeps within their byte.
struct B16 {
  using V = uint8x16_t;
  static V load(const uint8_t* p) { return vld1q_u8(p); }
  static void store(void* p, V v) { vst1q_u8(static_cast<uint8_t*>(p), v); }
  static V and8(V v, int m) { return vandq_u8(v, vdupq_n_u8(static_cast<uint8_t>(m))); }
  static V and16(V v, int m) {
    return vreinterpretq_u8_u16(vandq_u16(vreinterpretq_u16_u8(v), vdupq_n_u16(static_cast<uint16_t>(m))));
  }
  static V or_(V a, V b) { return vorrq_u8(a, b); }
  static V sub8(V v, int c) { return vsubq_u8(v, vdupq_n_u8(static_cast<uint8_t>(c))); }
  template <int N>
  static V srl16(V v) {
    return vreinterpretq_u8_u16(vshrq_n_u16(vreinterpretq_u16_u8(v), N));
  }
  template <int N>
  static V sll16(V v) {
    return vreinterpretq_u8_u16(vshlq_n_u16(vreinterpretq_u16_u8(v), N));
  }
  static V srl16(V v, int n) {
    return vreinterpretq_u8_u16(vshlq_u16(vreinterpretq_u16_u8(v), vdupq_n_s16(static_cast<int16_t>(-n))));
  }
  // The low bytes of two vectors of 16-bit lanes (each at most 255), a's then b's.
  static V narrow16(V a, V b) {
    return vcombine_u8(vmovn_u16(vreinterpretq_u16_u8(a)), vmovn_u16(vreinterpretq_u16_u8(b)));
  }
};

[[gnu::always_inline]] inline void prefetch_line(const uint8_t* p) { __builtin_prefetch(p, 0, 3); }

}  // namespace
}  // namespace cai::hal::cpu
