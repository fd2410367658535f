// B16 and prefetch_line for ARM64, beside either RowLanes (row_lanes_neon.h, row_lanes_sve.h): the group kernels of
// qdot_groups_simd.h unpack the K-quant scales of a group's 16 rows with 128-bit NEON on both. Internal linkage.
#pragma once

#include <arm_neon.h>

#include <cstdint>

namespace cai::hal::cpu {
namespace {

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
