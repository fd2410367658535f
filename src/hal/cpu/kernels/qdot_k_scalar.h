// Portable integer dot-product kernels for the K-quants (Q2_K..Q6_K), included by qdot_scalar.cpp: the reference the
// SIMD versions (qdot_k_avx2.h) are tested against. Every activation block (32 elements, one ActBlockQ8) meets one
// 32-element stretch of a 256-element super-block; its integer products are summed exactly in int, the weight
// offsets (mins, or the code bias of the signed types) are folded in through ActBlockQ8::sum, and the float scales
// are applied once per activation block. Layouts: docs/design/formats.md#k-quants and core/quant_k.cpp.
#pragma once

#include <cmath>
#include <cstdint>

#include "core/block_bytes.h"
#include "core/quant_act.h"
#include "core/quant_k.h"
#include "hal/cpu/kernels/qdot_kernels.h"

namespace cai::hal::cpu {
namespace {

// Bytes of one 256-element super-block per K type.
template <DType T>
inline constexpr int kSuperBytes = T == DType::kQ2_K   ? 84
                                   : T == DType::kQ3_K ? 110
                                   : T == DType::kQ4_K ? 144
                                   : T == DType::kQ5_K ? 176
                                                       : 210;

// Q4_K / Q5_K: Σ over one super-block of (d·sc_s·q − dmin·m_s)·(a.d·a.q). Sub-block s takes its codes from the low
// (even s) or high (odd s) nibbles of qs[32·(s/2) ..], plus bit s of qh[l] as the 5th bit for Q5_K (qh null: Q4_K).
inline float q4or5_k_super(const uint8_t* blk, const uint8_t* qh, const uint8_t* qs, const ActBlockQ8* a) {
  const float d = block_bytes::load_f16(blk), dmin = block_bytes::load_f16(blk + 2);
  float acc = 0.0f;
  for (int s = 0; s < 8; ++s) {
    int sc, m;
    quant_k::scale_min(blk + 4, s, &sc, &m);
    const uint8_t* q = qs + 32 * (s / 2);
    const int shift = 4 * (s % 2);
    int isum = 0;
    for (int l = 0; l < 32; ++l) {
      int code = (q[l] >> shift) & 15;
      if (qh) code |= ((qh[l] >> s) & 1) << 4;
      isum += code * a[s].q[l];
    }
    const int bsum = a[s].sum[0] + a[s].sum[1];
    acc += a[s].d * (d * static_cast<float>(sc) * static_cast<float>(isum) -
                     dmin * static_cast<float>(m) * static_cast<float>(bsum));
  }
  return acc;
}

// Q6_K: Σ over one super-block of d·sc_k·(q − 32)·(a.d·a.q), k = element / 16. Activation block b = 4h + g (half h,
// group g) takes its low 4 bits from ql[64h + 32·(g & 1) ..] (low nibble for g < 2, else high) and its high 2 bits
// from bits 2g of qh[32h ..]; the bias 32 comes back through a.sum of each 16-element half.
inline float q6_k_super(const uint8_t* blk, const ActBlockQ8* a) {
  const uint8_t* ql = blk;
  const uint8_t* qh = blk + 128;
  const int8_t* scales = reinterpret_cast<const int8_t*>(blk + 192);
  const float d = block_bytes::load_f16(blk + 208);
  float acc = 0.0f;
  for (int b = 0; b < 8; ++b) {
    const int h = b / 4, g = b % 4;
    const uint8_t* lo = ql + 64 * h + 32 * (g & 1);
    const int lshift = g < 2 ? 0 : 4;
    int isum = 0;  // Σ over both 16-element halves of sc·(Σ q·a.q − 32·Σ a.q)
    for (int half = 0; half < 2; ++half) {
      int part = 0;
      for (int l = 16 * half; l < 16 * half + 16; ++l) {
        const int code = ((lo[l] >> lshift) & 15) | (((qh[32 * h + l] >> (2 * g)) & 3) << 4);
        part += code * a[b].q[l];
      }
      isum += scales[2 * b + half] * (part - 32 * a[b].sum[half]);
    }
    acc += a[b].d * (d * static_cast<float>(isum));
  }
  return acc;
}

// Q2_K / Q3_K: the 2-bit codes of activation block b = 4h + j (half h, plane j) are bits 2j of qs[32h ..]; element l
// of the block has scale index 2b + l / 16. Q2_K: value = d·(sc & 15)·q − dmin·(sc >> 4). Q3_K: the high bit is bit
// 4h + j of hmask[l], value = d·scale·(q2 + 4·hbit − 4); the bias 4 comes back through a.sum.
template <DType T>
float q2or3_k_super(const uint8_t* blk, const ActBlockQ8* a) {
  constexpr bool kQ3 = T == DType::kQ3_K;
  const uint8_t* qs = blk + (kQ3 ? 32 : 16);
  const float d = block_bytes::load_f16(blk + (kQ3 ? 108 : 80));
  const float dmin = kQ3 ? 0.0f : block_bytes::load_f16(blk + 82);
  float acc = 0.0f;
  for (int b = 0; b < 8; ++b) {
    const int h = b / 4, j = b % 4;
    int isc = 0, imin = 0;  // Σ sc·(Σ code·a.q) and (Q2_K) Σ min·(Σ a.q) over both halves
    for (int half = 0; half < 2; ++half) {
      const int k = 2 * b + half;
      int part = 0;
      for (int l = 16 * half; l < 16 * half + 16; ++l) {
        int code = (qs[32 * h + l] >> (2 * j)) & 3;
        if constexpr (kQ3) code |= ((blk[l] >> (4 * h + j)) & 1) << 2;
        part += code * a[b].q[l];
      }
      if constexpr (kQ3) {
        isc += quant_k::q3_k_scale(blk + 96, k) * (part - 4 * a[b].sum[half]);
      } else {
        isc += (blk[k] & 15) * part;
        imin += (blk[k] >> 4) * a[b].sum[half];
      }
    }
    if constexpr (kQ3)
      acc += a[b].d * (d * static_cast<float>(isc));
    else
      acc += a[b].d * (d * static_cast<float>(isc) - dmin * static_cast<float>(imin));
  }
  return acc;
}

// One weight row of `in` elements times nx activation rows, super-block by super-block, one float sum per row.
template <DType T>
void k_dot_scalar(const uint8_t* w, const ActBlockQ8* x, int64_t ldx, int nx, int64_t in, float* out) {
  constexpr int kBytes = kSuperBytes<T>;
  for (int j = 0; j < nx; ++j) {
    const ActBlockQ8* xj = x + j * ldx;
    float acc = 0.0f;
    for (int64_t sb = 0; sb < in / 256; ++sb) {
      const uint8_t* blk = w + sb * kBytes;
      const ActBlockQ8* a = xj + 8 * sb;
      if constexpr (T == DType::kQ4_K)
        acc += q4or5_k_super(blk, nullptr, blk + 16, a);
      else if constexpr (T == DType::kQ5_K)
        acc += q4or5_k_super(blk, blk + 16, blk + 48, a);
      else if constexpr (T == DType::kQ6_K)
        acc += q6_k_super(blk, a);
      else
        acc += q2or3_k_super<T>(blk, a);
    }
    out[j] = acc;
  }
}

// Interleaved 16-row groups (qdot_groups.h; Q4_0's kernel is in qdot_scalar.cpp, the K-quants' below):
// out[j · 16 + r] for row r of the group, with the operations (and so the bits) of the SIMD group kernels
// (qdot_groups_simd.h). Byte `i` of unit u of row r of a field starting at `base` with `unit`-byte units.
inline uint8_t group_byte(const uint8_t* blk, int base, int unit, int u, int r, int i) {
  return blk[base + (u * kPackedGroupRows + r) * unit + i];
}

// The loops every int8 group kernel shares: for each activation row j, group block by group block (kBlockBytes, each
// meeting kActBlocks activation blocks), row by row, row_step(block, first activation block, r, acc[r]) adds that
// block's contribution to row r; out[j · 16 + r] = acc[r].
template <int kBlockBytes, int kActBlocks, class RowStep>
void group_dot_rows(const uint8_t* w, const ActBlockQ8* x, int64_t ldx, int nx, int64_t in, float* out,
                    const RowStep& row_step) {
  constexpr int kR = kPackedGroupRows;
  for (int j = 0; j < nx; ++j) {
    float acc[kR] = {};
    for (int64_t b = 0; b < in / (kActBlocks * kActBlock); ++b)
      for (int r = 0; r < kR; ++r) row_step(w + b * kBlockBytes, x + j * ldx + kActBlocks * b, r, acc[r]);
    for (int r = 0; r < kR; ++r) out[j * kR + r] = acc[r];
  }
}

// Q4_K and Q5_K (kQ5: the qh quads between the scales and qs add bit s as the 5th bit of sub-block s): per row and
// sub-block s, acc = fma(isum, (d · sc) · a.d, acc), then acc = fma(dmin · m, −(a.d · Σ a.q), acc).
template <bool kQ5>
void q45_k_r16_dot(const uint8_t* w, const ActBlockQ8* x, int64_t ldx, int nx, int64_t in, float* out) {
  constexpr int kR = kPackedGroupRows, kCodes = (kQ5 ? 48 : 16) * kR;
  const auto row_step = [](const uint8_t* blk, const ActBlockQ8* a, int r, float& acc) {
    uint8_t scales[12];
    for (int k = 0; k < 12; ++k) scales[k] = group_byte(blk, 4 * kR, 1, k, r, 0);
    const float d = block_bytes::load_f16(blk + 2 * r), dmin = block_bytes::load_f16(blk + 2 * kR + 2 * r);
    for (int s = 0; s < 8; ++s) {
      int sc, m;
      quant_k::scale_min(scales, s, &sc, &m);
      int isum = 0;
      for (int l = 0; l < 32; ++l) {
        int code = (group_byte(blk, kCodes, 4, 8 * (s / 2) + l / 4, r, l % 4) >> (4 * (s % 2))) & 15;
        if constexpr (kQ5) code |= ((group_byte(blk, 16 * kR, 4, l / 4, r, l % 4) >> s) & 1) << 4;
        isum += code * a[s].q[l];
      }
      acc = std::fma(static_cast<float>(isum), d * static_cast<float>(sc) * a[s].d, acc);
      acc = std::fma(dmin * static_cast<float>(m), -(a[s].d * static_cast<float>(a[s].sum[0] + a[s].sum[1])), acc);
    }
  };
  group_dot_rows<kR*(kQ5 ? 176 : 144), 8>(w, x, ldx, nx, in, out, row_step);
}

// Q6_K: per row and activation block, the sums of both 16-element halves s_k = Σ code·a.q − 32·Σ a.q exactly in int,
// then in float t = fma(s_1, d·sc_1, s_0 · (d·sc_0)) and acc = fma(t, a.d, acc).
inline void q6_k_r16_dot(const uint8_t* w, const ActBlockQ8* x, int64_t ldx, int nx, int64_t in, float* out) {
  constexpr int kR = kPackedGroupRows, kScales = 2 * kR, kLow = 18 * kR, kHigh = kLow + 128 * kR;
  const auto row_step = [](const uint8_t* blk, const ActBlockQ8* a, int r, float& acc) {
    const float d = block_bytes::load_f16(blk + 2 * r);
    for (int b = 0; b < 8; ++b) {
      const int h = b / 4, g = b % 4;
      float scaled[2];  // s_k and d·sc_k
      for (int half = 0; half < 2; ++half) {
        int part = 0;
        for (int l = 16 * half; l < 16 * half + 16; ++l) {
          const int lo = group_byte(blk, kLow, 4, 16 * h + 8 * (g & 1) + l / 4, r, l % 4) >> (g < 2 ? 0 : 4);
          const int hi = group_byte(blk, kHigh, 4, 8 * h + l / 4, r, l % 4) >> (2 * g);
          part += ((lo & 15) | ((hi & 3) << 4)) * a[b].q[l];
        }
        scaled[half] = static_cast<float>(part - 32 * a[b].sum[half]);
      }
      const auto dsc = [&](int half) {
        return d * static_cast<float>(static_cast<int8_t>(group_byte(blk, kScales, 1, 2 * b + half, r, 0)));
      };
      const float t = std::fma(scaled[1], dsc(1), scaled[0] * dsc(0));
      acc = std::fma(t, a[b].d, acc);
    }
  };
  group_dot_rows<kR * kSuperBytes<DType::kQ6_K>, 8>(w, x, ldx, nx, in, out, row_step);
}

// Q2_K and Q3_K: per row and activation block b = 4h + j, element l's 2-bit code is bits 2j of qs byte 32h + l (quad
// 8h + l / 4), Q3_K's 4s bit is bit b of hmask byte l (quad l / 4). Q2_K: isc = Σ over both halves of sc·(Σ code·a.q),
// imin = Σ m·Σ a.q, then acc = fma(isc, d · a.d, acc), acc = fma(imin, dmin · −a.d, acc). Q3_K: isum = Σ over both
// halves of sc·(Σ code·a.q − 4·Σ a.q), then acc = fma(isum, d · a.d, acc).
template <bool kQ3>
void q23_k_r16_dot(const uint8_t* w, const ActBlockQ8* x, int64_t ldx, int nx, int64_t in, float* out) {
  constexpr int kR = kPackedGroupRows, kCodes = (kQ3 ? 46 : 20) * kR;
  const auto row_step = [](const uint8_t* blk, const ActBlockQ8* a, int r, float& acc) {
    const float d = block_bytes::load_f16(blk + 2 * r), dmin = kQ3 ? 0.0f : block_bytes::load_f16(blk + 2 * kR + 2 * r);
    uint8_t scales[16];
    for (int k = 0; k < (kQ3 ? 12 : 16); ++k) scales[k] = group_byte(blk, (kQ3 ? 2 : 4) * kR, 1, k, r, 0);
    for (int b = 0; b < 8; ++b) {
      const int h = b / 4, j = b % 4;
      int isc = 0, imin = 0;
      for (int half = 0; half < 2; ++half) {
        const int k = 2 * b + half;
        int part = 0;
        for (int l = 16 * half; l < 16 * half + 16; ++l) {
          int code = (group_byte(blk, kCodes, 4, 8 * h + l / 4, r, l % 4) >> (2 * j)) & 3;
          if constexpr (kQ3) code |= ((group_byte(blk, 14 * kR, 4, l / 4, r, l % 4) >> b) & 1) << 2;
          part += code * a[b].q[l];
        }
        if constexpr (kQ3) {
          isc += quant_k::q3_k_scale(scales, k) * (part - 4 * a[b].sum[half]);
        } else {
          isc += (scales[k] & 15) * part;
          imin += (scales[k] >> 4) * a[b].sum[half];
        }
      }
      acc = std::fma(static_cast<float>(isc), d * a[b].d, acc);
      if constexpr (!kQ3) acc = std::fma(static_cast<float>(imin), dmin * -a[b].d, acc);
    }
  };
  group_dot_rows<kR * kSuperBytes<kQ3 ? DType::kQ3_K : DType::kQ2_K>, 8>(w, x, ldx, nx, in, out, row_step);
}

inline void register_qdot_k_scalar(QDotKernels& k) {
  k.dot[static_cast<int>(DType::kQ4_K_R16)] = q45_k_r16_dot<false>;
  k.dot[static_cast<int>(DType::kQ5_K_R16)] = q45_k_r16_dot<true>;
  k.dot[static_cast<int>(DType::kQ6_K_R16)] = q6_k_r16_dot;
  k.dot[static_cast<int>(DType::kQ2_K_R16)] = q23_k_r16_dot<false>;
  k.dot[static_cast<int>(DType::kQ3_K_R16)] = q23_k_r16_dot<true>;
  k.dot[static_cast<int>(DType::kQ2_K)] = k_dot_scalar<DType::kQ2_K>;
  k.dot[static_cast<int>(DType::kQ3_K)] = k_dot_scalar<DType::kQ3_K>;
  k.dot[static_cast<int>(DType::kQ4_K)] = k_dot_scalar<DType::kQ4_K>;
  k.dot[static_cast<int>(DType::kQ5_K)] = k_dot_scalar<DType::kQ5_K>;
  k.dot[static_cast<int>(DType::kQ6_K)] = k_dot_scalar<DType::kQ6_K>;
}

}  // namespace
}  // namespace cai::hal::cpu
