// The ARM64 GEMM table on NEON: the decoders of every weight type (the IQ1..IQ3 grid types in core's block loops),
// the fused dequant·dot of the exact path (row_dot), the panel micro-kernel of prefill and the attention loops
// (rows_dot, rows_axpy). The dots and accumulations keep the AVX2 kernels' order (vec_simd.h, gemm_avx2.cpp): a dot
// runs chains of 8 lanes (two registers each) and reduces them in the same tree, an accumulation is one fused
// multiply-add per element and row, rows in order. With the decoders' exact values (and the build's -ffp-contract=off
// for the portable code), the ARM64 and x86-64 builds give the same bits for the same inputs.
#include "hal/cpu/kernels/gemm_kernels.h"

#if defined(__aarch64__)

#include <arm_neon.h>

#include <algorithm>
#include <cmath>

#include "core/block_bytes.h"
#include "core/dtype.h"
#include "core/quant.h"
#include "core/quant_grids.h"
#include "core/quant_iq_rows.h"
#include "core/quant_k.h"
#include "hal/cpu/kernels/gemm_decoder_list.h"

namespace cai::hal::cpu {
namespace {

// An AVX2 register's 8 lanes: lanes 0..3 and 4..7.
struct Lanes8 {
  float32x4_t lo, hi;
};

inline Lanes8 fma8(const float* x, const float* v, Lanes8 acc) {
  return {vfmaq_f32(acc.lo, vld1q_f32(x), vld1q_f32(v)), vfmaq_f32(acc.hi, vld1q_f32(x + 4), vld1q_f32(v + 4))};
}

inline Lanes8 add8(Lanes8 a, Lanes8 b) { return {vaddq_f32(a.lo, b.lo), vaddq_f32(a.hi, b.hi)}; }

// hsum8 (simd_scalars.h): lanes (i, i + 4), then (i, i + 2), then (0, 1).
inline float hsum8(Lanes8 v) {
  const float32x4_t t4 = vaddq_f32(v.lo, v.hi);
  const float32x2_t t2 = vadd_f32(vget_low_f32(t4), vget_high_f32(t4));
  return vget_lane_f32(t2, 0) + vget_lane_f32(t2, 1);
}

float vec_dot(const float* x, const float* v, int64_t n) {
  const Lanes8 zero{vdupq_n_f32(0.0f), vdupq_n_f32(0.0f)};
  Lanes8 a0 = zero, a1 = zero, a2 = zero, a3 = zero;
  int64_t d = 0;
  for (; d + 32 <= n; d += 32) {
    a0 = fma8(x + d, v + d, a0);
    a1 = fma8(x + d + 8, v + d + 8, a1);
    a2 = fma8(x + d + 16, v + d + 16, a2);
    a3 = fma8(x + d + 24, v + d + 24, a3);
  }
  for (; d + 8 <= n; d += 8) a0 = fma8(x + d, v + d, a0);
  float dot = hsum8(add8(add8(a0, a1), add8(a2, a3)));
  for (; d < n; ++d) dot = std::fma(x[d], v[d], dot);
  return dot;
}

// DequantFn: n elements (whole blocks) of one weight row as F32, the bits of core/quant's dequantize_row, on NEON for
// every type; F32 (never decoded) keeps this primary template.
template <DType T>
void dequant(const uint8_t* w, float* dst, int64_t n) {
  dequantize_row(T, w, dst, n);
}

template <>
void dequant<DType::kF16>(const uint8_t* w, float* dst, int64_t n) {
  int64_t k = 0;
  for (; k + 8 <= n; k += 8) {
    const float16x8_t h = vreinterpretq_f16_u16(vld1q_u16(reinterpret_cast<const uint16_t*>(w) + k));
    vst1q_f32(dst + k, vcvt_f32_f16(vget_low_f16(h)));
    vst1q_f32(dst + k + 4, vcvt_high_f32_f16(h));
  }
  if (k < n) dequantize_row(DType::kF16, w + 2 * k, dst + k, n - k);
}

template <>
void dequant<DType::kBF16>(const uint8_t* w, float* dst, int64_t n) {
  int64_t k = 0;
  for (; k + 8 <= n; k += 8) {
    const uint16x8_t b = vld1q_u16(reinterpret_cast<const uint16_t*>(w) + k);
    vst1q_f32(dst + k, vreinterpretq_f32_u32(vshll_n_u16(vget_low_u16(b), 16)));
    vst1q_f32(dst + k + 4, vreinterpretq_f32_u32(vshll_high_n_u16(b, 16)));
  }
  if (k < n) dequantize_row(DType::kBF16, w + 2 * k, dst + k, n - k);
}

// E4M3 as an F16 with the same sign, exponent and mantissa bits 3 places lower (exponent bias 15 instead of 7: the
// value / 256, exact also for subnormals), converted and scaled back; codes 0x7F and 0xFF are core/quant's NaNs.
template <>
void dequant<DType::kF8_E4M3>(const uint8_t* w, float* dst, int64_t n) {
  static const float32x4_t nan_pos = vdupq_n_f32(fp8_e4m3_to_f32(0x7F)), nan_neg = vdupq_n_f32(fp8_e4m3_to_f32(0xFF));
  const float32x4_t scale = vdupq_n_f32(256.0f);
  int64_t k = 0;
  for (; k + 8 <= n; k += 8) {
    const uint16x8_t c = vmovl_u8(vld1_u8(w + k));
    const uint16x8_t mag = vandq_u16(c, vdupq_n_u16(0x7F));
    const uint16x8_t h = vorrq_u16(vshlq_n_u16(mag, 7), vshlq_n_u16(vshrq_n_u16(c, 7), 15));
    const float16x8_t f = vreinterpretq_f16_u16(h);
    const uint16x8_t nan = vceqq_u16(mag, vdupq_n_u16(0x7F));
    const uint16x8_t neg = vcgeq_u16(c, vdupq_n_u16(0x80));
    const float32x4_t v[2] = {vmulq_f32(vcvt_f32_f16(vget_low_f16(f)), scale), vmulq_f32(vcvt_high_f32_f16(f), scale)};
    // The 16-bit masks sign-extended to 32 bits: all ones where set.
    const int16x8_t nan_mask = vreinterpretq_s16_u16(nan), neg_mask = vreinterpretq_s16_u16(neg);
    const uint32x4_t is_nan[2] = {vreinterpretq_u32_s32(vmovl_s16(vget_low_s16(nan_mask))),
                                  vreinterpretq_u32_s32(vmovl_high_s16(nan_mask))};
    const uint32x4_t is_neg[2] = {vreinterpretq_u32_s32(vmovl_s16(vget_low_s16(neg_mask))),
                                  vreinterpretq_u32_s32(vmovl_high_s16(neg_mask))};
    for (int i = 0; i < 2; ++i) {
      const float32x4_t nan_value = vbslq_f32(is_neg[i], nan_neg, nan_pos);
      vst1q_f32(dst + k + 4 * i, vbslq_f32(is_nan[i], nan_value, v[i]));
    }
  }
  if (k < n) dequantize_row(DType::kF8_E4M3, w + k, dst + k, n - k);
}

// Q8_0 and Q4_0: code (less 8 for Q4_0) times the block's scale, one rounding, as core/quant computes it.
inline void scaled_codes(int8x16_t lo, int8x16_t hi, float d, float* dst) {
  const float32x4_t s = vdupq_n_f32(d);
  const int8x16_t q[2] = {lo, hi};
  for (int h = 0; h < 2; ++h) {
    const int16x8_t a = vmovl_s8(vget_low_s8(q[h])), b = vmovl_high_s8(q[h]);
    vst1q_f32(dst + 16 * h, vmulq_f32(s, vcvtq_f32_s32(vmovl_s16(vget_low_s16(a)))));
    vst1q_f32(dst + 16 * h + 4, vmulq_f32(s, vcvtq_f32_s32(vmovl_high_s16(a))));
    vst1q_f32(dst + 16 * h + 8, vmulq_f32(s, vcvtq_f32_s32(vmovl_s16(vget_low_s16(b)))));
    vst1q_f32(dst + 16 * h + 12, vmulq_f32(s, vcvtq_f32_s32(vmovl_high_s16(b))));
  }
}

template <>
void dequant<DType::kQ8_0>(const uint8_t* w, float* dst, int64_t n) {
  for (int64_t b = 0; b < n / 32; ++b, w += 34, dst += 32) {
    const int8x16_t lo = vld1q_s8(reinterpret_cast<const int8_t*>(w + 2)),
                    hi = vld1q_s8(reinterpret_cast<const int8_t*>(w + 18));
    scaled_codes(lo, hi, block_bytes::load_f16(w), dst);
  }
}

// The 32 4-bit codes of a 32-element block (elements 0..15: low nibbles of qs, 16..31: high), with the 5th bit of
// element j from bit j of the 32-bit qh where qh is given (Q5_0, Q5_1).
inline void nibble_codes(const uint8_t* qs, const uint8_t* qh, uint8x16_t& lo, uint8x16_t& hi) {
  const uint8x16_t q = vld1q_u8(qs);
  lo = vandq_u8(q, vdupq_n_u8(0x0F));
  hi = vshrq_n_u8(q, 4);
  if (!qh) return;
  // Byte j / 8 of qh in lane j, then bit j % 8 of it: 16 where set.
  const uint8x8_t bytes = vreinterpret_u8_u32(vdup_n_u32(block_bytes::load_u32(qh)));
  const uint8x16_t lanes_lo = vcombine_u8(vdup_lane_u8(bytes, 0), vdup_lane_u8(bytes, 1));
  const uint8x16_t lanes_hi = vcombine_u8(vdup_lane_u8(bytes, 2), vdup_lane_u8(bytes, 3));
  static const uint8_t kBits[16] = {1, 2, 4, 8, 16, 32, 64, 128, 1, 2, 4, 8, 16, 32, 64, 128};
  const uint8x16_t bits = vld1q_u8(kBits), sixteen = vdupq_n_u8(16);
  lo = vorrq_u8(lo, vandq_u8(vtstq_u8(lanes_lo, bits), sixteen));
  hi = vorrq_u8(hi, vandq_u8(vtstq_u8(lanes_hi, bits), sixteen));
}

// Q4_0 and Q5_0: d · (code − offset) for a block's 32 codes (nibble_codes).
inline void centred_codes(uint8x16_t lo, uint8x16_t hi, int8_t offset, float d, float* dst) {
  const int8x16_t o = vdupq_n_s8(offset);
  scaled_codes(vsubq_s8(vreinterpretq_s8_u8(lo), o), vsubq_s8(vreinterpretq_s8_u8(hi), o), d, dst);
}

template <>
void dequant<DType::kQ4_0>(const uint8_t* w, float* dst, int64_t n) {
  for (int64_t b = 0; b < n / 32; ++b, w += 18, dst += 32) {
    uint8x16_t lo, hi;
    nibble_codes(w + 2, nullptr, lo, hi);
    centred_codes(lo, hi, 8, block_bytes::load_f16(w), dst);
  }
}

// 16 signed codes times one scale (less an offset where `affine`), each product rounded before the subtraction.
inline void scale_16(int8x16_t q, float step, float off, bool affine, float* dst) {
  const float32x4_t s = vdupq_n_f32(step), o = vdupq_n_f32(off);
  const int16x8_t a = vmovl_s8(vget_low_s8(q)), b = vmovl_high_s8(q);
  const int32x4_t v[4] = {vmovl_s16(vget_low_s16(a)), vmovl_high_s16(a), vmovl_s16(vget_low_s16(b)), vmovl_high_s16(b)};
  for (int i = 0; i < 4; ++i) {
    const float32x4_t y = vmulq_f32(s, vcvtq_f32_s32(v[i]));
    vst1q_f32(dst + 4 * i, affine ? vsubq_f32(y, o) : y);
  }
}

// The 2-bit codes of Q2_K and Q3_K: elements 128h + 32j + 16p + l (l < 16) are bits 2j of qs[32h + 16p + l].
inline uint8x16_t two_bit_codes(const uint8_t* qs, int h, int j, int p) {
  return vandq_u8(vshlq_u8(vld1q_u8(qs + 32 * h + 16 * p), vdupq_n_s8(static_cast<int8_t>(-2 * j))), vdupq_n_u8(3));
}

// Q2_K: (d · scale) · code − dmin · min per 16 elements, as core/quant.
template <>
void dequant<DType::kQ2_K>(const uint8_t* w, float* dst, int64_t n) {
  for (int64_t b = 0; b < n / 256; ++b, w += 84, dst += 256) {
    const float d = block_bytes::load_f16(w + 80), dmin = block_bytes::load_f16(w + 82);
    for (int h = 0; h < 2; ++h)
      for (int j = 0; j < 4; ++j)
        for (int p = 0; p < 2; ++p) {
          const int i0 = 128 * h + 32 * j + 16 * p;
          const uint8_t sc = w[i0 / 16];
          const int8x16_t q = vreinterpretq_s8_u8(two_bit_codes(w + 16, h, j, p));
          scale_16(q, d * static_cast<float>(sc & 15), dmin * static_cast<float>(sc >> 4), true, dst + i0);
        }
  }
}

// Q3_K: (d · scale) · (code − 4 where the high bit is clear) per 16 elements, as core/quant.
template <>
void dequant<DType::kQ3_K>(const uint8_t* w, float* dst, int64_t n) {
  for (int64_t b = 0; b < n / 256; ++b, w += 110, dst += 256) {
    const uint8_t* hmask = w;
    const float d = block_bytes::load_f16(w + 108);
    for (int h = 0; h < 2; ++h)
      for (int j = 0; j < 4; ++j)
        for (int p = 0; p < 2; ++p) {
          const int i0 = 128 * h + 32 * j + 16 * p;
          const uint8x16_t high = vandq_u8(
              vshlq_u8(vld1q_u8(hmask + 16 * p), vdupq_n_s8(static_cast<int8_t>(-(4 * h + j)))), vdupq_n_u8(1));
          const uint8x16_t minus = vshlq_n_u8(veorq_u8(high, vdupq_n_u8(1)), 2);  // 4 where the bit is clear
          const int8x16_t q = vsubq_s8(vreinterpretq_s8_u8(two_bit_codes(w + 32, h, j, p)), vreinterpretq_s8_u8(minus));
          scale_16(q, d * static_cast<float>(quant_k::q3_k_scale(w + 96, i0 / 16)), 0.0f, false, dst + i0);
        }
  }
}

// Q4_K and Q5_K (qh: the 5th bits, null for Q4_K): per sub-block, d · scale · code − dmin · min, the product rounded
// before the subtraction (as core/quant).
void dequant_4or5(const uint8_t* w, const uint8_t* qh, const uint8_t* qs, float* dst) {
  const float d = block_bytes::load_f16(w), dmin = block_bytes::load_f16(w + 2);
  for (int c = 0; c < 4; ++c) {
    const uint8x16_t q[2] = {vld1q_u8(qs + 32 * c), vld1q_u8(qs + 32 * c + 16)};
    for (int half = 0; half < 2; ++half) {  // sub-block 2c (low nibbles), 2c + 1 (high)
      int sc = 0, m = 0;
      quant_k::scale_min(w + 4, 2 * c + half, &sc, &m);
      const float32x4_t step = vdupq_n_f32(d * static_cast<float>(sc));
      const float32x4_t off = vdupq_n_f32(dmin * static_cast<float>(m));
      for (int r = 0; r < 2; ++r) {
        uint8x16_t codes = half ? vshrq_n_u8(q[r], 4) : vandq_u8(q[r], vdupq_n_u8(0x0F));
        if (qh) {  // bit 2c + half of qh[l] is the 5th bit of element l
          const int8x16_t down = vdupq_n_s8(static_cast<int8_t>(-(2 * c + half)));
          const uint8x16_t bit = vandq_u8(vshlq_u8(vld1q_u8(qh + 16 * r), down), vdupq_n_u8(1));
          codes = vorrq_u8(codes, vshlq_n_u8(bit, 4));
        }
        const uint16x8_t lo = vmovl_u8(vget_low_u8(codes)), hi = vmovl_high_u8(codes);
        const uint32x4_t u[4] = {vmovl_u16(vget_low_u16(lo)), vmovl_high_u16(lo), vmovl_u16(vget_low_u16(hi)),
                                 vmovl_high_u16(hi)};
        float* out = dst + 64 * c + 32 * half + 16 * r;
        for (int i = 0; i < 4; ++i) vst1q_f32(out + 4 * i, vsubq_f32(vmulq_f32(step, vcvtq_f32_u32(u[i])), off));
      }
    }
  }
}

template <>
void dequant<DType::kQ4_K>(const uint8_t* w, float* dst, int64_t n) {
  for (int64_t b = 0; b < n / 256; ++b, w += 144, dst += 256) dequant_4or5(w, nullptr, w + 16, dst);
}

template <>
void dequant<DType::kQ5_K>(const uint8_t* w, float* dst, int64_t n) {
  for (int64_t b = 0; b < n / 256; ++b, w += 176, dst += 256) dequant_4or5(w, w + 16, w + 48, dst);
}

// Q6_K: (d · scale) · (code − 32) per 16 elements, as core/quant.
template <>
void dequant<DType::kQ6_K>(const uint8_t* w, float* dst, int64_t n) {
  for (int64_t b = 0; b < n / 256; ++b, w += 210, dst += 256) {
    const uint8_t* ql = w;
    const uint8_t* qh = w + 128;
    const int8_t* scales = reinterpret_cast<const int8_t*>(w + 192);
    const float d = block_bytes::load_f16(w + 208);
    for (int h = 0; h < 2; ++h)
      for (int g = 0; g < 4; ++g)
        for (int l0 = 0; l0 < 32; l0 += 16) {  // elements 128h + 32g + l0 .. + 15
          const uint8x16_t lbyte = vld1q_u8(ql + 64 * h + l0 + 32 * (g & 1));
          const uint8x16_t low = g < 2 ? vandq_u8(lbyte, vdupq_n_u8(0x0F)) : vshrq_n_u8(lbyte, 4);
          const uint8x16_t high =
              vandq_u8(vshlq_u8(vld1q_u8(qh + 32 * h + l0), vdupq_n_s8(static_cast<int8_t>(-2 * g))), vdupq_n_u8(3));
          const int8x16_t q = vsubq_s8(vreinterpretq_s8_u8(vorrq_u8(low, vshlq_n_u8(high, 4))), vdupq_n_s8(32));
          const int i0 = 128 * h + 32 * g + l0;
          const float32x4_t dsc = vdupq_n_f32(d * static_cast<float>(scales[i0 / 16]));
          const int16x8_t a = vmovl_s8(vget_low_s8(q)), bq = vmovl_high_s8(q);
          const int32x4_t v[4] = {vmovl_s16(vget_low_s16(a)), vmovl_high_s16(a), vmovl_s16(vget_low_s16(bq)),
                                  vmovl_high_s16(bq)};
          for (int i = 0; i < 4; ++i) vst1q_f32(dst + i0 + 4 * i, vmulq_f32(dsc, vcvtq_f32_s32(v[i])));
        }
  }
}

// Q4_1 and Q5_1: d · code + m, the product rounded before the addition (as core/quant).
template <bool kFive>
void dequant_affine_32(const uint8_t* w, float* dst, int64_t n) {
  constexpr int kBytes = kFive ? 24 : 20;
  for (int64_t b = 0; b < n / 32; ++b, w += kBytes, dst += 32) {
    uint8x16_t lo, hi;
    nibble_codes(w + (kFive ? 8 : 4), kFive ? w + 4 : nullptr, lo, hi);
    const float d = block_bytes::load_f16(w), m = block_bytes::load_f16(w + 2);
    scale_16(vreinterpretq_s8_u8(lo), d, -m, true, dst);  // d·q − (−m): the same bits as d·q + m
    scale_16(vreinterpretq_s8_u8(hi), d, -m, true, dst + 16);
  }
}

template <>
void dequant<DType::kQ4_1>(const uint8_t* w, float* dst, int64_t n) {
  dequant_affine_32<false>(w, dst, n);
}

template <>
void dequant<DType::kQ5_1>(const uint8_t* w, float* dst, int64_t n) {
  dequant_affine_32<true>(w, dst, n);
}

// Q5_0: d · (code − 16).
template <>
void dequant<DType::kQ5_0>(const uint8_t* w, float* dst, int64_t n) {
  for (int64_t b = 0; b < n / 32; ++b, w += 22, dst += 32) {
    uint8x16_t lo, hi;
    nibble_codes(w + 6, w + 2, lo, hi);
    centred_codes(lo, hi, 16, block_bytes::load_f16(w), dst);
  }
}

// IQ4_NL and IQ4_XS: the scale times the level a nibble picks (quant_grids::kIq4nlValues), one table lookup per 16.
inline void iq4_levels_scaled(const uint8_t* qs, float d, float* dst) {
  const int8x16_t table = vld1q_s8(quant_grids::kIq4nlValues);
  uint8x16_t lo, hi;
  nibble_codes(qs, nullptr, lo, hi);
  scaled_codes(vqtbl1q_s8(table, lo), vqtbl1q_s8(table, hi), d, dst);
}

template <>
void dequant<DType::kIQ4_NL>(const uint8_t* w, float* dst, int64_t n) {
  for (int64_t b = 0; b < n / 32; ++b, w += 18, dst += 32) iq4_levels_scaled(w + 2, block_bytes::load_f16(w), dst);
}

// IQ4_XS: sub-block s of 32 as IQ4_NL with d · (ls − 32), ls its 6-bit scale.
template <>
void dequant<DType::kIQ4_XS>(const uint8_t* w, float* dst, int64_t n) {
  for (int64_t b = 0; b < n / 256; ++b, w += 136) {
    const float d = block_bytes::load_f16(w);
    const uint16_t scales_h = block_bytes::load_u16(w + 2);
    for (int s = 0; s < 8; ++s, dst += 32) {
      const int ls = ((w[4 + s / 2] >> (4 * (s % 2))) & 15) | (((scales_h >> (2 * s)) & 3) << 4);
      iq4_levels_scaled(w + 8 + 16 * s, d * static_cast<float>(ls - 32), dst);
    }
  }
}

// The IQ1..IQ3 grid types: core's block loops (core/quant_iq_rows.h) with 8 elements written on NEON, the same bits.
struct NeonPut {
  // dl · magnitude byte j, negated (the sign bit flipped, as −v) where the sign byte has bit j.
  static void signed8(float dl, uint64_t magnitudes, uint8_t signs, float* y) {
    static const uint8_t kBit[8] = {1, 2, 4, 8, 16, 32, 64, 128};
    const uint16x8_t m = vmovl_u8(vcreate_u8(magnitudes));
    const uint16x8_t neg = vmovl_u8(vtst_u8(vdup_n_u8(signs), vld1_u8(kBit)));  // 0x00FF where negated
    const float32x4_t s = vdupq_n_f32(dl);
    const uint32x4_t mags[2] = {vmovl_u16(vget_low_u16(m)), vmovl_high_u16(m)};
    const uint32x4_t flips[2] = {vshlq_n_u32(vmovl_u16(vget_low_u16(neg)), 24), vshlq_n_u32(vmovl_high_u16(neg), 24)};
    for (int h = 0; h < 2; ++h) {
      const uint32x4_t v = vreinterpretq_u32_f32(vmulq_f32(s, vcvtq_f32_u32(mags[h])));
      vst1q_f32(y + 4 * h, vreinterpretq_f32_u32(veorq_u32(v, vandq_u32(flips[h], vdupq_n_u32(0x80000000u)))));
    }
  }
  // dl · (grid byte + delta), the sum rounded first.
  static void iq1(float dl, float delta, uint64_t grid, float* y) {
    const int16x8_t g = vmovl_s8(vcreate_s8(grid));
    const float32x4_t s = vdupq_n_f32(dl), dd = vdupq_n_f32(delta);
    vst1q_f32(y, vmulq_f32(s, vaddq_f32(vcvtq_f32_s32(vmovl_s16(vget_low_s16(g))), dd)));
    vst1q_f32(y + 4, vmulq_f32(s, vaddq_f32(vcvtq_f32_s32(vmovl_high_s16(g)), dd)));
  }
};

#define CAI_NEON_GRID_DEQUANT(T, rows)                              \
  template <>                                                       \
  void dequant<DType::T>(const uint8_t* w, float* dst, int64_t n) { \
    quant_iq::grid_rows::rows<NeonPut>(w, dst, n);                  \
  }
CAI_NEON_GRID_DEQUANT(kIQ2_XXS, iq2_xxs_rows)
CAI_NEON_GRID_DEQUANT(kIQ2_XS, iq2_xs_rows)
CAI_NEON_GRID_DEQUANT(kIQ2_S, iq2_s_rows)
CAI_NEON_GRID_DEQUANT(kIQ3_XXS, iq3_xxs_rows)
CAI_NEON_GRID_DEQUANT(kIQ3_S, iq3_s_rows)
CAI_NEON_GRID_DEQUANT(kIQ1_S, iq1_s_rows)
CAI_NEON_GRID_DEQUANT(kIQ1_M, iq1_m_rows)
#undef CAI_NEON_GRID_DEQUANT

constexpr int64_t kChunk = 256;  // elements decoded at a time (a multiple of every block size)

// RowDotFn with the AVX2 kernel's sums (gemm_avx2.cpp's dot_nx): each activation row has two chains of 8 lanes; the
// 4 groups of 8 elements of each 32 go to chains 0, 1, 0, 1; the chains are added, the lanes reduced as hsum8 does,
// and the elements past the last multiple of 32 (plain types only) added one by one with fused multiply-adds. So
// `--precision exact` gives x86-64's bits for the same weights. Each row's order is the same whatever nx is.
template <DType T>
void row_dot(const uint8_t* w, const float* x, int64_t ldx, int nx, int64_t in, float* out) {
  const DTypeInfo& info = dtype_info(T);
  const int64_t main = info.block_elems == 1 ? in / 32 * 32 : in;
  alignas(16) float buf[kChunk];
  Lanes8 chain[kMaxDotRows][2];
  for (int j = 0; j < nx; ++j) chain[j][0] = chain[j][1] = {vdupq_n_f32(0.0f), vdupq_n_f32(0.0f)};
  for (int64_t k0 = 0; k0 < main; k0 += kChunk) {
    const int64_t len = std::min(kChunk, main - k0);
    const float* chunk = buf;
    if constexpr (T == DType::kF32)
      chunk = reinterpret_cast<const float*>(w) + k0;
    else
      dequant<T>(w + k0 / info.block_elems * info.block_bytes, buf, len);
    for (int j = 0; j < nx; ++j) {
      const float* xj = x + j * ldx + k0;
      Lanes8 c0 = chain[j][0], c1 = chain[j][1];
      for (int64_t e = 0; e < len; e += 32) {
        c0 = fma8(chunk + e, xj + e, c0);
        c1 = fma8(chunk + e + 8, xj + e + 8, c1);
        c0 = fma8(chunk + e + 16, xj + e + 16, c0);
        c1 = fma8(chunk + e + 24, xj + e + 24, c1);
      }
      chain[j][0] = c0;
      chain[j][1] = c1;
    }
  }
  for (int j = 0; j < nx; ++j) {
    out[j] = hsum8(add8(chain[j][0], chain[j][1]));
    for (int64_t k = main; k < in; ++k) {
      float v;
      dequantize_row(T, w + k * info.block_bytes, &v, 1);
      out[j] = std::fma(v, x[j * ldx + k], out[j]);
    }
  }
}

constexpr int kNr = 16, kMr = 6;  // the AVX2 micro-kernel's panel: 16 weight rows, up to 6 activation rows

// MicroFn as gemm_avx2.cpp's: each output's products over the panel's kc columns in one fused multiply-add chain from
// zero, then added to c.
template <int M>
void micro_m(const float* a, int64_t lda, const float* p, int64_t kc, float* c, int64_t ldc, int n_valid) {
  float32x4_t acc[M][4];
  for (auto& r : acc)
    for (auto& v : r) v = vdupq_n_f32(0.0f);
  for (int64_t k = 0; k < kc; ++k) {
    float32x4_t pk[4];
    for (int q = 0; q < 4; ++q) pk[q] = vld1q_f32(p + k * kNr + 4 * q);
    for (int i = 0; i < M; ++i) {
      const float32x4_t av = vdupq_n_f32(a[i * lda + k]);
      for (int q = 0; q < 4; ++q) acc[i][q] = vfmaq_f32(acc[i][q], av, pk[q]);
    }
  }
  for (int i = 0; i < M; ++i) {
    float* ci = c + i * ldc;
    alignas(16) float tmp[kNr];
    for (int q = 0; q < 4; ++q) vst1q_f32(tmp + 4 * q, acc[i][q]);
    for (int j = 0; j < n_valid; ++j) ci[j] += tmp[j];
  }
}

void micro(const float* a, int64_t lda, int m, const float* p, int64_t kc, float* c, int64_t ldc, int n_valid) {
  with_micro_rows(m, [&](auto rows) { micro_m<decltype(rows)::value>(a, lda, p, kc, c, ldc, n_valid); });
}

void rows_dot(const float* q, int64_t ldq, int nq, const float* rows, int64_t ldr, int nt, int64_t n, float* out,
              int64_t ldo) {
  for (int t = 0; t < nt; ++t)
    for (int i = 0; i < nq; ++i) out[i * ldo + t] = vec_dot(q + i * ldq, rows + t * ldr, n);
}

// y_i += Σ_t a[i·lda + t] · row t: 16 columns at a time in four registers over all rows, then 4, then one by one.
void rows_axpy(const float* a, int64_t lda, int ny, const float* rows, int64_t ldr, int nt, int64_t n, float* y,
               int64_t ldy) {
  for (int i = 0; i < ny; ++i) {
    float* yi = y + i * ldy;
    const float* ai = a + i * lda;
    int64_t d = 0;
    for (; d + 16 <= n; d += 16) {
      float32x4_t acc[4];
      for (int c = 0; c < 4; ++c) acc[c] = vld1q_f32(yi + d + 4 * c);
      for (int t = 0; t < nt; ++t) {
        const float* row = rows + t * ldr + d;
        const float32x4_t w = vdupq_n_f32(ai[t]);
        for (int c = 0; c < 4; ++c) acc[c] = vfmaq_f32(acc[c], w, vld1q_f32(row + 4 * c));
      }
      for (int c = 0; c < 4; ++c) vst1q_f32(yi + d + 4 * c, acc[c]);
    }
    for (; d + 4 <= n; d += 4) {
      float32x4_t acc = vld1q_f32(yi + d);
      for (int t = 0; t < nt; ++t) acc = vfmaq_f32(acc, vdupq_n_f32(ai[t]), vld1q_f32(rows + t * ldr + d));
      vst1q_f32(yi + d, acc);
    }
    for (; d < n; ++d)
      for (int t = 0; t < nt; ++t) yi[d] = std::fma(ai[t], rows[t * ldr + d], yi[d]);
  }
}

}  // namespace

const GemmKernels& gemm_kernels_neon() {
  static const GemmKernels table = [] {
    GemmKernels k = gemm_kernels_scalar();
#define CAI_NEON_ROW_DOT(Decoder, T)                          \
  k.row_dot[static_cast<int>(DType::T)] = &row_dot<DType::T>; \
  k.dequant[static_cast<int>(DType::T)] = &dequant<DType::T>;
    CAI_GEMM_DECODERS(CAI_NEON_ROW_DOT)
#undef CAI_NEON_ROW_DOT
    k.micro = &micro;
    k.nr = kNr;
    k.mr = kMr;
    k.rows_dot = &rows_dot;
    k.rows_axpy = &rows_axpy;
    return k;
  }();
  return table;
}

}  // namespace cai::hal::cpu

#endif
