// Portable integer kernels of the packed IQ4_NL and IQ4_XS groups (qdot_groups.h), included by qdot_scalar.cpp after
// qdot_k_scalar.h (group_byte, group_dot_rows): the reference the SIMD group kernels (qdot_groups_simd.h) are tested
// against. A 4-bit code selects a signed level of quant_grids::kIq4nlValues; per row and activation block the integer
// sum Σ level·a.q is exact, then acc = fma(isum, scale · a.d, acc) with scale = d (IQ4_NL) or d · (ls − 32) (IQ4_XS,
// in float, as dequantize_iq4_xs computes it). Layouts: docs/design/formats.md#iq-quants and core/quant_iq.h.
#pragma once

#include <cmath>
#include <cstdint>

#include "core/block_bytes.h"
#include "core/quant_act.h"
#include "core/quant_grids.h"
#include "hal/cpu/kernels/qdot_kernels.h"

namespace cai::hal::cpu {
namespace {

// Σ level·a.q over one 32-element stretch of row r whose 4 code quads are units u0 .. u0 + 3 of the field at `base`
// (low nibbles elements 4v .. 4v + 3, high nibbles 16 + 4v ..).
inline int iq4_group_isum(const uint8_t* blk, int base, int u0, int r, const ActBlockQ8& a) {
  int s = 0;
  for (int v = 0; v < 4; ++v)
    for (int k = 0; k < 4; ++k) {
      const uint8_t q = group_byte(blk, base, 4, u0 + v, r, k);
      s += quant_grids::kIq4nlValues[q & 0x0F] * a.q[4 * v + k];
      s += quant_grids::kIq4nlValues[q >> 4] * a.q[16 + 4 * v + k];
    }
  return s;
}

inline void iq4_nl_r16_dot(const uint8_t* w, const ActBlockQ8* x, int64_t ldx, int nx, int64_t in, float* out) {
  constexpr int kR = kPackedGroupRows;
  const auto row_step = [](const uint8_t* blk, const ActBlockQ8* a, int r, float& acc) {
    const int s = iq4_group_isum(blk, 2 * kR, 0, r, *a);
    acc = std::fma(static_cast<float>(s), block_bytes::load_f16(blk + 2 * r) * a->d, acc);
  };
  group_dot_rows<kR * 18, 1>(w, x, ldx, nx, in, out, row_step);
}

// The 6-bit scale of sub-block s of row r in a packed IQ4_XS super-block, less 32.
inline int iq4_xs_group_scale(const uint8_t* blk, int s, int r) {
  constexpr int kR = kPackedGroupRows;
  const int high = block_bytes::load_u16(blk + 2 * kR + 2 * r);
  const int low = (group_byte(blk, 4 * kR, 1, s / 2, r, 0) >> (4 * (s % 2))) & 15;
  return (low | (((high >> (2 * s)) & 3) << 4)) - 32;
}

inline void iq4_xs_r16_dot(const uint8_t* w, const ActBlockQ8* x, int64_t ldx, int nx, int64_t in, float* out) {
  constexpr int kR = kPackedGroupRows;
  const auto row_step = [](const uint8_t* blk, const ActBlockQ8* a, int r, float& acc) {
    const float d = block_bytes::load_f16(blk + 2 * r);
    for (int s = 0; s < 8; ++s) {
      const int isum = iq4_group_isum(blk, 8 * kR, 4 * s, r, a[s]);
      const float dl = d * static_cast<float>(iq4_xs_group_scale(blk, s, r));
      acc = std::fma(static_cast<float>(isum), dl * a[s].d, acc);
    }
  };
  group_dot_rows<kR * 136, 8>(w, x, ldx, nx, in, out, row_step);
}

inline void register_qdot_iq4_scalar(QDotKernels& k) {
  k.dot[static_cast<int>(DType::kIQ4_NL_R16)] = iq4_nl_r16_dot;
  k.dot[static_cast<int>(DType::kIQ4_XS_R16)] = iq4_xs_r16_dot;
}

}  // namespace
}  // namespace cai::hal::cpu
