// RowLanes for ARM64 SVE at a vector length fixed when the including file is compiled (-msve-vector-bits=256 or 512):
// a group's 16 rows in 64 / (bits / 8) registers (two of 8 rows at 256 bits, one of 16 at 512), so one broadcast
// activation quad feeds all 16 rows, as on NEON (row_lanes_neon.h) with half or a quarter of its vector operations.
// The int8 product is SVE's sdot. Only the int8 group kernels use it: the int16 products of Q8_0 (dot16) stay on NEON,
// as base SVE has no int16 → int32 dot product. Every kernel gives the scalar kernels' bits. Included by
// qdot_groups_simd.h; internal linkage.
#pragma once

#include <arm_sve.h>

#include "core/block_bytes.h"
#include "hal/cpu/kernels/b16_neon.h"

namespace cai::hal::cpu {
namespace {

using block_bytes::load_i32;

constexpr int kSveBits = __ARM_FEATURE_SVE_BITS;
static_assert(kSveBits == 256 || kSveBits == 512, "the SVE group kernels are built for 256- or 512-bit vectors");

// Fixed-length forms of SVE's vector types: they may be members and array elements.
typedef svint32_t SveI32 __attribute__((arm_sve_vector_bits(__ARM_FEATURE_SVE_BITS)));
typedef svfloat32_t SveF32 __attribute__((arm_sve_vector_bits(__ARM_FEATURE_SVE_BITS)));

struct RowLanes {
  static constexpr int kRows = 16;
  static constexpr bool kPairs = false;
  static constexpr int kRegs = 16 * 32 / kSveBits;  // registers a group's 16 rows take
  static constexpr int kRegRows = kSveBits / 32;    // rows a register holds
  static constexpr int kRegBytes = kSveBits / 8;
  struct I {
    SveI32 v[kRegs];
  };
  struct F {
    SveF32 v[kRegs];
  };
  [[gnu::always_inline]] static svbool_t all() { return svptrue_b8(); }
  template <class Fn>
  [[gnu::always_inline]] static I each(Fn fn) {
    I r;
    for (int k = 0; k < kRegs; ++k) r.v[k] = fn(k);
    return r;
  }
  template <class Fn>
  [[gnu::always_inline]] static F each_f(Fn fn) {
    F r;
    for (int k = 0; k < kRegs; ++k) r.v[k] = fn(k);
    return r;
  }
  [[gnu::always_inline]] static svuint8_t u8(SveI32 v) { return svreinterpret_u8_s32(v); }
  [[gnu::always_inline]] static svuint16_t u16(SveI32 v) { return svreinterpret_u16_s32(v); }
  [[gnu::always_inline]] static I zero() {
    return each([](int) { return svdup_n_s32(0); });
  }
  [[gnu::always_inline]] static F fzero() {
    return each_f([](int) { return svdup_n_f32(0.0f); });
  }
  [[gnu::always_inline]] static I quads(const uint8_t* p) {  // 4 bytes per row
    return each([p](int k) { return svreinterpret_s32_u8(svld1_u8(all(), p + kRegBytes * k)); });
  }
  [[gnu::always_inline]] static I bytes_i8(const uint8_t* p) {
    return each([p](int k) { return svld1sb_s32(all(), reinterpret_cast<const int8_t*>(p) + kRegRows * k); });
  }
  [[gnu::always_inline]] static I bytes_u8(const uint8_t* p) {
    return each([p](int k) { return svreinterpret_s32_u32(svld1ub_u32(all(), p + kRegRows * k)); });
  }
  // An F16 in the low half of each 32-bit lane, widened (fcvt reads the even halves).
  [[gnu::always_inline]] static F f16(const uint8_t* p) {
    return each_f([p](int k) {
      const svuint32_t h = svld1uh_u32(all(), reinterpret_cast<const uint16_t*>(p) + kRegRows * k);
      return svcvt_f32_f16_x(all(), svreinterpret_f16_u32(h));
    });
  }
  [[gnu::always_inline]] static I set1(int32_t v) {
    return each([v](int) { return svdup_n_s32(v); });
  }
  [[gnu::always_inline]] static F fset1(float v) {
    return each_f([v](int) { return svdup_n_f32(v); });
  }
  [[gnu::always_inline]] static I and8(I v, int m) {
    return each([&](int k) { return svreinterpret_s32_u8(svand_n_u8_x(all(), u8(v.v[k]), static_cast<uint8_t>(m))); });
  }
  [[gnu::always_inline]] static I high_nibbles(I v) {
    return each([&](int k) { return svreinterpret_s32_u8(svlsr_n_u8_x(all(), u8(v.v[k]), 4)); });
  }
  [[gnu::always_inline]] static I or_(I a, I b) {
    return each([&](int k) { return svorr_s32_x(all(), a.v[k], b.v[k]); });
  }
  template <int N>
  [[gnu::always_inline]] static I srl16(I v) {
    if constexpr (N == 0)
      return v;
    else
      return srl16(v, N);
  }
  template <int N>
  [[gnu::always_inline]] static I sll16(I v) {
    return sll16(v, N);
  }
  [[gnu::always_inline]] static I srl16(I v, int n) {
    const auto by = static_cast<uint16_t>(n);
    return each([&](int k) { return svreinterpret_s32_u16(svlsr_n_u16_x(all(), u16(v.v[k]), by)); });
  }
  [[gnu::always_inline]] static I sll16(I v, int n) {
    const auto by = static_cast<uint16_t>(n);
    return each([&](int k) { return svreinterpret_s32_u16(svlsl_n_u16_x(all(), u16(v.v[k]), by)); });
  }
  [[gnu::always_inline]] static I add(I a, I b) {
    return each([&](int k) { return svadd_s32_x(all(), a.v[k], b.v[k]); });
  }
  [[gnu::always_inline]] static I mullo(I a, I b) {
    return each([&](int k) { return svmul_s32_x(all(), a.v[k], b.v[k]); });
  }
  // Per int32 lane: acc + Σ of 4 adjacent s8 × s8 products (a byte that stands for an unsigned code is below 128).
  [[gnu::always_inline]] static I dot_u8s8(I acc, I u, I s) {
    return each([&](int k) { return svdot_s32(acc.v[k], svreinterpret_s8_s32(u.v[k]), svreinterpret_s8_s32(s.v[k])); });
  }
  // The activation quad at p, broadcast once for the 16 rows.
  [[gnu::always_inline]] static I dot_u8s8_at(I acc, I u, const int8_t* p) {
    const svint8_t x = svreinterpret_s8_s32(svdup_n_s32(load_i32(p)));
    return each([&](int k) { return svdot_s32(acc.v[k], svreinterpret_s8_s32(u.v[k]), x); });
  }
  // Table levels (IQ4) stay signed: the product is signed × signed. The table is replicated to every 128-bit segment;
  // indices below 16 pick from the first.
  static constexpr int kLevelBias = 0;
  [[gnu::always_inline]] static I table16(const uint8_t* t) {
    const SveI32 r = svreinterpret_s32_u8(svld1rq_u8(all(), t));
    return each([&](int) { return r; });
  }
  [[gnu::always_inline]] static I lookup(I table, I index) {
    return each([&](int k) { return svreinterpret_s32_u8(svtbl_u8(u8(table.v[k]), u8(index.v[k]))); });
  }
  [[gnu::always_inline]] static I signed_level(I codes) { return codes; }
  [[gnu::always_inline]] static I dot_level(I acc, I level, I x) { return dot_u8s8(acc, level, x); }
  [[gnu::always_inline]] static I dot_level_at(I acc, I level, const int8_t* p) { return dot_u8s8_at(acc, level, p); }
  [[gnu::always_inline]] static F cvt(I v) {
    return each_f([&](int k) { return svcvt_f32_s32_x(all(), v.v[k]); });
  }
  [[gnu::always_inline]] static F mul(F a, F b) {
    return each_f([&](int k) { return svmul_f32_x(all(), a.v[k], b.v[k]); });
  }
  [[gnu::always_inline]] static F fma(F a, F b, F c) {  // c + a · b, one rounding
    return each_f([&](int k) { return svmla_f32_x(all(), c.v[k], a.v[k], b.v[k]); });
  }
  [[gnu::always_inline]] static void store(float* p, F v) {
    for (int k = 0; k < kRegs; ++k) svst1_f32(all(), p + kRegRows * k, v.v[k]);
  }
};

}  // namespace
}  // namespace cai::hal::cpu
