// The integer kernels of interleaved 16-row groups (layouts in qdot_groups.h) for the including file's ISA, each
// written once against RowLanes: on x86-64 (row_lanes_x86.h) one 512-bit vector holds the 16 rows where the file is
// compiled with AVX-512 VNNI (vpdpwssd for Q8_0, vpdpbusd for the others), two 256-bit halves of 8 rows otherwise
// (vpmaddwd, vpmaddubsw + vpmaddwd); on ARM64 (row_lanes_neon.h) four 128-bit registers of 4 rows (sdot where the file
// is compiled with dotprod), or two or one SVE registers where it is compiled for 256- or 512-bit SVE
// (row_lanes_sve.h). Every row and block gets the exact int32 sum, then the same float multiplies and fused
// multiply-adds as the scalar kernels (qdot_scalar.cpp, qdot_k_scalar.h), so every ISA gives the same bits. Included
// by qdot_simd_table.h, qdot_neon_table.h and qdot_sve_table.h; internal linkage.
#pragma once

#include "core/block_bytes.h"
#include "core/quant_grids.h"
#include "hal/cpu/kernels/qdot_groups.h"
#include "hal/cpu/kernels/qdot_nx.h"
#if defined(__aarch64__) && defined(__ARM_FEATURE_SVE_BITS) && __ARM_FEATURE_SVE_BITS >= 256
#include "hal/cpu/kernels/row_lanes_sve.h"
#elif defined(__aarch64__)
#include "hal/cpu/kernels/row_lanes_neon.h"
#else
#include "hal/cpu/kernels/row_lanes_x86.h"
#endif

namespace cai::hal::cpu {
namespace {

constexpr int kGroupRows = kPackedGroupRows;

// The group kernels read each weight byte once, in order; on their own the hardware prefetchers keep too few lines in
// flight (`gemm/q4_k_r16/1536x1536/n1/t1`), so each code load asks for the line 4 KiB ahead (kDefaultAhead). Always
// inlined: GCC otherwise takes the function for one without effects and drops its calls from the always-inlined helpers
// (the Q6_K, Q2_K and Q3_K kernels then prefetch nothing).
constexpr int kDefaultAhead = 4096;
template <int kAhead = kDefaultAhead>
[[gnu::always_inline]] inline void prefetch_ahead(const uint8_t* p) {
  prefetch_line(p + kAhead);
}

// Two exceptions, measured on Zen 5 with the weights on huge pages as the model keeps them (cai-bench-kernels,
// 8960×1536, interleaved runs):
// - The AVX-512 Q8_0 kernels (int16 and int8 activations) at one activation row ask for nothing (kPrefetchQ8, below):
//   they stream a 544-byte block in about 40 instructions, the hardware prefetchers keep up with that, and one
//   prefetch per code load only takes issue slots (`gemm/q8_0_r16/8960x1536/n1/pool`; decode in `cai bench`). The
//   AVX2 ones, two passes of 8 rows per block, are slower without and keep theirs.
// - Q6_K, whose blocks are read as two streams (low and high bits), asks 16 KiB ahead, faster at one row and at 16,
//   AVX2 too (`gemm/q6_k_r16/8960x1536/n16/t1`, `gemm/q6_k_r16/8960x1536/n1/pool`).
// - So does Q5_K, whose 5th bits come from a second stream (`gemm/q5_k_r16/8960x1536/n16/t1`); Q4_K, one stream,
//   gains nothing measurable from 16 KiB and stays at 4.
constexpr int kQ6_KAhead = 16384, kQ5_KAhead = 16384;

using L = RowLanes;
constexpr int kHalves = kGroupRows / L::kRows;  // vectors per group: 1 (AVX-512, NEON) or 2 (AVX2)

// Whether the Q8_0 kernels for NX activation rows prefetch (prefetch_ahead).
template <int NX>
constexpr bool kPrefetchQ8 = NX > 1 || kHalves > 1;

// The form the ISA adds int16 pair products into for NX activation rows (Lanes::PairSums up to kPairSumRows, else I),
// zeroed. A function rather than std::conditional_t: vector types lose their attributes as template arguments.
template <int NX, class Lanes>
auto zero_pair_sums() {
  if constexpr (NX <= Lanes::kPairSumRows)
    return typename Lanes::PairSums{};
  else
    return typename Lanes::I{};
}

// Q8_0: per column pair, one int16 pair of all rows times the broadcast activation pair. Lanes: RowLanes, a template
// parameter so that a RowLanes without int16 products (row_lanes_sve.h) compiles the file without this kernel.
template <int NX, class Lanes = L>
void q8_0_r16_dot16_nx(const uint8_t* w, const ActBlockQ16* x, const float* xd, int64_t ldx, int64_t in, float* out) {
  constexpr int kBlock = kGroupRows * 34, kCodes = 2 * kGroupRows;
  for (int h = 0; h < kHalves; ++h) {
    typename Lanes::F acc[NX];
    for (auto& a : acc) a = Lanes::fzero();
    for (int64_t b = 0; b < in / kActBlock; ++b) {
      const uint8_t* blk = w + b * kBlock;
      decltype(zero_pair_sums<NX, Lanes>()) s[NX];  // the block's sums
      for (auto& v : s) v = zero_pair_sums<NX, Lanes>();
        // Unrolled, the 16 pairs' loads and broadcasts overlap (`gemm/q8_0_r16/8960x1536/n16/t1`, two calls of 8
        // rows; left to itself GCC keeps the loop).
#pragma GCC unroll 16
      for (int p = 0; p < kActBlock / 2; ++p) {
        const uint8_t* at = blk + kCodes + (p * kGroupRows + h * Lanes::kRows) * 2;
        if constexpr (kPrefetchQ8<NX>) prefetch_ahead(at);
        const typename Lanes::I wq = Lanes::pairs_i16(at);
        for (int j = 0; j < NX; ++j) s[j] = Lanes::dot_s16_at(s[j], wq, x[j * ldx + b].q + 2 * p);
      }
      const typename Lanes::F dw = Lanes::f16(blk + 2 * h * Lanes::kRows);
      for (int j = 0; j < NX; ++j)
        acc[j] = Lanes::fma(Lanes::cvt(Lanes::pair_total(s[j])), Lanes::mul(dw, Lanes::fset1(xd[j * ldx + b])), acc[j]);
    }
    for (int j = 0; j < NX; ++j) Lanes::store(out + j * kGroupRows + h * Lanes::kRows, acc[j]);
  }
}

// What the codes of the 32-element block layouts stand for, as the group kernels multiply them: levels(raw) gives
// the bytes that meet the activation codes in dot() / dot_at(), and those products carry kOffset · Σ a.q more than
// the weight values', which each sum starts without. kNibbles: two 4-bit codes per byte (18-byte blocks), else one
// int8 code per byte (34-byte blocks).
// Q4_0: the nibble itself (value = code − 8), unsigned into u8 × s8 products.
struct Q4_0Nibbles {
  static constexpr bool kNibbles = true;
  static constexpr int kOffset = 8;
  [[gnu::always_inline]] L::I levels(L::I nibbles) const { return nibbles; }
  [[gnu::always_inline]] static L::I dot(L::I acc, L::I w, L::I x) { return L::dot_u8s8(acc, w, x); }
  [[gnu::always_inline]] static L::I dot_at(L::I acc, L::I w, const int8_t* x) { return L::dot_u8s8_at(acc, w, x); }
};

// IQ4_NL / IQ4_XS: one of 16 int8 levels (quant_grids::kIq4nlValues), picked with one table lookup per vector, in the
// form and with the product this ISA takes (RowLanes::kLevelBias, dot_level).
struct IQ4Levels {
  static constexpr bool kNibbles = true;
  static constexpr int kOffset = L::kLevelBias;
  L::I table;
  IQ4Levels() {
    alignas(16) uint8_t t[16];
    for (int i = 0; i < 16; ++i) t[i] = static_cast<uint8_t>(quant_grids::kIq4nlValues[i] + L::kLevelBias);
    table = L::table16(t);
  }
  [[gnu::always_inline]] L::I levels(L::I nibbles) const { return L::lookup(table, nibbles); }
  [[gnu::always_inline]] static L::I dot(L::I acc, L::I w, L::I x) { return L::dot_level(acc, w, x); }
  [[gnu::always_inline]] static L::I dot_at(L::I acc, L::I w, const int8_t* x) { return L::dot_level_at(acc, w, x); }
};

// Q8_0 for 8-bit activations (kQ8_0_R16_I8): the signed code, as this ISA's level product takes it.
struct Q8Bytes {
  static constexpr bool kNibbles = false;
  static constexpr int kOffset = L::kLevelBias;
  [[gnu::always_inline]] L::I levels(L::I codes) const { return L::signed_level(codes); }
  [[gnu::always_inline]] static L::I dot(L::I acc, L::I w, L::I x) { return L::dot_level(acc, w, x); }
  [[gnu::always_inline]] static L::I dot_at(L::I acc, L::I w, const int8_t* x) { return L::dot_level_at(acc, w, x); }
};

// Each block sum of activation row j starts at −kOffset · Σ of its activation codes (for every group), so no
// subtraction follows the products. For Q4_0 (kOffset 8) that is the block's neg8_sum, broadcast from memory.
template <class Codes, int NX, int G>
[[gnu::always_inline]] inline void start_at_offset(const ActBlockQ8* a, int64_t ldx, L::I (&s)[G][NX]) {
  static_assert(Codes::kOffset % 8 == 0);
  for (int j = 0; j < NX; ++j) {
    const ActBlockQ8& aj = a[j * ldx];
    const L::I offset = L::set1(aj.neg8_sum * (Codes::kOffset / 8));
    for (int g = 0; g < G; ++g) s[g][j] = offset;
  }
}

// The integer sums of one 32-element stretch of 4-bit codes for G groups: the 4 code quads of group g start at
// quads + g · group_bytes (a group field's quad, the next kGroupRows · 4 bytes on; low nibbles elements 4v ..,
// high nibbles 16 + 4v ..), their levels meet activation block a of each row (sums started by start_at_offset).
template <int NX, int G, class Codes>
[[gnu::always_inline]] inline void nibble_block_sums(const Codes& codes, const uint8_t* quads, int64_t group_bytes,
                                                     const ActBlockQ8* a, int64_t ldx, L::I (&s)[G][NX]) {
  start_at_offset<Codes>(a, ldx, s);
#pragma GCC unroll 4
  for (int v = 0; v < 4; ++v) {
    L::I lo[G], hi[G];
    for (int g = 0; g < G; ++g) {
      const uint8_t* at = quads + g * group_bytes + v * kGroupRows * 4;
      prefetch_ahead(at);
      const L::I raw = L::quads(at);
      lo[g] = codes.levels(L::and8(raw, 0x0F));
      hi[g] = codes.levels(L::high_nibbles(raw));
    }
#pragma GCC unroll 16
    for (int j = 0; j < NX; ++j) {
      const ActBlockQ8& aj = a[j * ldx];
      if constexpr (G == 1) {
        s[0][j] = Codes::dot_at(Codes::dot_at(s[0][j], lo[0], aj.q + 4 * v), hi[0], aj.q + 16 + 4 * v);
      } else {  // one broadcast register feeds the G groups
        const L::I xlo = L::set1(load_i32(aj.q + 4 * v)), xhi = L::set1(load_i32(aj.q + 16 + 4 * v));
        for (int g = 0; g < G; ++g) s[g][j] = Codes::dot(Codes::dot(s[g][j], lo[g], xlo), hi[g], xhi);
      }
    }
  }
}

// The same for one block of int8 codes: 8 quads (4 columns each) per group field.
template <int NX, int G, class Codes>
[[gnu::always_inline]] inline void byte_block_sums(const Codes& codes, const uint8_t* quads, int64_t group_bytes,
                                                   const ActBlockQ8* a, int64_t ldx, L::I (&s)[G][NX]) {
  start_at_offset<Codes>(a, ldx, s);
#pragma GCC unroll 8
  for (int v = 0; v < kActBlock / 4; ++v) {
    L::I c[G];
    for (int g = 0; g < G; ++g) {
      const uint8_t* at = quads + g * group_bytes + v * kGroupRows * 4;
      if constexpr (kPrefetchQ8<NX>) prefetch_ahead(at);
      c[g] = codes.levels(L::quads(at));
    }
#pragma GCC unroll 16
    for (int j = 0; j < NX; ++j) {
      if constexpr (G == 1) {
        s[0][j] = Codes::dot_at(s[0][j], c[0], a[j * ldx].q + 4 * v);
      } else {
        const L::I xq = L::set1(load_i32(a[j * ldx].q + 4 * v));
        for (int g = 0; g < G; ++g) s[g][j] = Codes::dot(s[g][j], c[g], xq);
      }
    }
  }
}

// The 32-element block layouts: Q4_0, IQ4_NL and Q8_0 for 8-bit activations (Codes: Q4_0Nibbles, IQ4Levels,
// Q8Bytes): blocks in order, each as nibble_block_sums or byte_block_sums gives, times d · a.d. G groups at once (the
// next at w + the group's bytes, its rows at out + j · G · 16 + 16 · g): each broadcast activation quad then feeds G
// groups, and G streams of weights are read side by side (where the two groups' float sums do not fit the registers,
// the compiler picks what to spill).
template <int NX, int G = 1, class Codes = Q4_0Nibbles>
void block32_r16_dot_nx(const uint8_t* w, const ActBlockQ8* x, int64_t ldx, int64_t in, float* out) {
  constexpr int kBlock = kGroupRows * (Codes::kNibbles ? 18 : 34), kCodes = 2 * kGroupRows;
  const int64_t group_bytes = in / kActBlock * kBlock;
  const Codes codes;
  for (int h = 0; h < kHalves; ++h) {
    L::F acc[G * NX];
    for (auto& v : acc) v = L::fzero();
    for (int64_t b = 0; b < in / kActBlock; ++b) {
      L::I s[G][NX];
      const uint8_t* quads = w + b * kBlock + kCodes + h * L::kRows * 4;
      const ActBlockQ8* a = x + b;
      if constexpr (Codes::kNibbles)
        nibble_block_sums<NX, G>(codes, quads, group_bytes, a, ldx, s);
      else
        byte_block_sums<NX, G>(codes, quads, group_bytes, a, ldx, s);
      for (int g = 0; g < G; ++g) {
        const L::F dw = L::f16(w + g * group_bytes + b * kBlock + 2 * h * L::kRows);
        for (int j = 0; j < NX; ++j)
          acc[g * NX + j] = L::fma(L::cvt(s[g][j]), L::mul(dw, L::fset1(a[j * ldx].d)), acc[g * NX + j]);
      }
    }
    for (int g = 0; g < G; ++g)
      for (int j = 0; j < NX; ++j) L::store(out + (j * G + g) * kGroupRows + h * L::kRows, acc[g * NX + j]);
  }
}

// The 6-bit scales and mins of the 16 rows of a Q4_K group super-block (scale bytes as [byte k][row] at p), unpacked
// as quant_k::scale_min does for one row: sc[s][r], mn[s][r].
inline void q4_k_group_scales(const uint8_t* p, uint8_t sc[8][kGroupRows], uint8_t mn[8][kGroupRows]) {
  B16::V b[12];
  for (int k = 0; k < 12; ++k) b[k] = B16::load(p + k * kGroupRows);
  // Bits 6..7 of each byte moved to bits 4..5 (the 16-bit shift brings nothing across: the mask keeps bits 4..5).
  const auto high_of = [](B16::V v) { return B16::and8(B16::srl16<2>(v), 0x30); };
  for (int s = 0; s < 4; ++s) {
    B16::store(sc[s], B16::and8(b[s], 63));
    B16::store(mn[s], B16::and8(b[s + 4], 63));
    B16::store(sc[s + 4], B16::or_(B16::and8(b[s + 8], 15), high_of(b[s])));
    B16::store(mn[s + 4], B16::or_(B16::and8(B16::srl16<4>(b[s + 8]), 15), high_of(b[s + 4])));
  }
}

// Adds sub-block `sub`'s scaled sums s[j] (16 rows) into acc[j]: acc = fma(isum, (d · sc) · a.d, acc), then
// acc = fma(dmin · m, −(a.d · Σ a.q), acc).
template <int NX>
[[gnu::always_inline]] inline void q4_k_scale_into(const L::I (&s)[NX], L::F dsc, L::F dm, const ActBlockQ8* a,
                                                   int64_t ldx, L::F (&acc)[NX]) {
#pragma GCC unroll 8
  for (int j = 0; j < NX; ++j) {
    const ActBlockQ8& aj = a[j * ldx];
    acc[j] = L::fma(L::cvt(s[j]), L::mul(dsc, L::fset1(aj.d)), acc[j]);
    acc[j] = L::fma(dm, L::fset1(aj.neg_d_sum), acc[j]);
  }
}

// Q4_K and Q5_K: per sub-block pair, each 64-byte quad row holds sub-block 2t in its low nibbles and 2t + 1 in its
// high ones; Q5_K adds bit 2t (2t + 1) of the qh quad of the same columns as the 5th bit.
template <int NX, bool kQ5>
void q45_k_r16_dot_nx(const uint8_t* w, const ActBlockQ8* x, int64_t ldx, int64_t in, float* out) {
  constexpr int kBlock = kGroupRows * (kQ5 ? 176 : 144), kScales = 4 * kGroupRows, kHigh = 16 * kGroupRows;
  constexpr int kCodes = (kQ5 ? 48 : 16) * kGroupRows;
  alignas(16) uint8_t sc[8][kGroupRows], mn[8][kGroupRows];
  for (int h = 0; h < kHalves; ++h) {
    L::F acc[NX];
    for (auto& a : acc) a = L::fzero();
    for (int64_t sb = 0; sb < in / 256; ++sb) {
      const uint8_t* blk = w + sb * kBlock;
      const ActBlockQ8* xs = x + 8 * sb;
      q4_k_group_scales(blk + kScales, sc, mn);
      const L::F d = L::f16(blk + 2 * h * L::kRows), dmin = L::f16(blk + 2 * kGroupRows + 2 * h * L::kRows);
      for (int t = 0; t < 4; ++t) {
        L::I lo_sum[NX], hi_sum[NX];
        for (auto& v : lo_sum) v = L::zero();
        for (auto& v : hi_sum) v = L::zero();
#pragma GCC unroll 8
        for (int v = 0; v < 8; ++v) {
          const uint8_t* at = blk + kCodes + ((8 * t + v) * kGroupRows + h * L::kRows) * 4;
          prefetch_ahead<kQ5 ? kQ5_KAhead : kDefaultAhead>(at);
          const L::I raw = L::quads(at);
          L::I lo = L::and8(raw, 0x0F), hi = L::high_nibbles(raw);
          if constexpr (kQ5) {  // bits 2t, 2t + 1 of each qh byte moved to bit 4 (the shifts stay within bytes)
            const L::I bits = L::srl16(L::quads(blk + kHigh + (v * kGroupRows + h * L::kRows) * 4), 2 * t);
            lo = L::or_(lo, L::and8(L::sll16<4>(bits), 0x10));
            hi = L::or_(hi, L::and8(L::sll16<3>(bits), 0x10));
          }
#pragma GCC unroll 8
          for (int j = 0; j < NX; ++j) {
            lo_sum[j] = L::dot_u8s8_at(lo_sum[j], lo, xs[j * ldx + 2 * t].q + 4 * v);
            hi_sum[j] = L::dot_u8s8_at(hi_sum[j], hi, xs[j * ldx + 2 * t + 1].q + 4 * v);
          }
        }
        const auto scale_of = [&](const uint8_t* bytes, L::F f) { return L::mul(f, L::cvt(L::bytes_u8(bytes))); };
        q4_k_scale_into<NX>(lo_sum, scale_of(sc[2 * t] + h * L::kRows, d), scale_of(mn[2 * t] + h * L::kRows, dmin),
                            xs + 2 * t, ldx, acc);
        q4_k_scale_into<NX>(hi_sum, scale_of(sc[2 * t + 1] + h * L::kRows, d),
                            scale_of(mn[2 * t + 1] + h * L::kRows, dmin), xs + 2 * t + 1, ldx, acc);
      }
    }
    for (int j = 0; j < NX; ++j) L::store(out + j * kGroupRows + h * L::kRows, acc[j]);
  }
}

// The 6-bit codes of 4 elements of every row of a Q6_K activation block 4·hb + G: low 4 bits from the ql quad (low
// nibbles for G < 2, else high), top 2 bits from bits 2G of the qh quad (every shift keeps the masked bits within
// their byte).
template <int G>
[[gnu::always_inline]] inline L::I q6_k_codes(L::I ql, L::I qh) {
  const L::I low = G < 2 ? L::and8(ql, 0x0F) : L::high_nibbles(ql);
  L::I top;
  if constexpr (G < 2)
    top = L::sll16<4 - 2 * G>(qh);
  else
    top = L::srl16<2 * G - 4>(qh);
  return L::or_(low, L::and8(top, 0x30));
}

// Starts the sums of activation block a over its two 16-element halves at −kBias · Σ a.q of that half: the products
// of codes that carry a bias (Q6_K 32, Q3_K 4) then add up to the sums of the signed values, with no subtraction after.
template <int NX, int kBias>
[[gnu::always_inline]] inline void start_biased_sums(const ActBlockQ8* a, int64_t ldx, L::I (&s0)[NX], L::I (&s1)[NX]) {
  for (int j = 0; j < NX; ++j) {
    if constexpr (kBias == 32) {  // ActBlockQ8::neg32_sum, a broadcast load
      s0[j] = L::set1(a[j * ldx].neg32_sum[0]);
      s1[j] = L::set1(a[j * ldx].neg32_sum[1]);
    } else {
      s0[j] = L::set1(-kBias * a[j * ldx].sum[0]);
      s1[j] = L::set1(-kBias * a[j * ldx].sum[1]);
    }
  }
}

// The signed integer sums of one 16-element half (quads 4·half .. 4·half + 3) of Q6_K activation block 4·hb + G,
// started at −32 · Σ a.q of that half (the codes' bias).
template <int NX, int G>
[[gnu::always_inline]] inline void q6_k_half_sums(const uint8_t* low, const uint8_t* high, const ActBlockQ8* a,
                                                  int64_t ldx, int half, L::I (&s)[NX]) {
  for (int j = 0; j < NX; ++j) s[j] = L::set1(a[j * ldx].neg32_sum[half]);
#pragma GCC unroll 4
  for (int q = 4 * half; q < 4 * half + 4; ++q) {
    prefetch_ahead<kQ6_KAhead>(low + q * 4 * kGroupRows);
    if (q % 2 == 0) prefetch_ahead<kQ6_KAhead>(high + q * 4 * kGroupRows);
    const L::I code = q6_k_codes<G>(L::quads(low + q * 4 * kGroupRows), L::quads(high + q * 4 * kGroupRows));
#pragma GCC unroll 16
    for (int j = 0; j < NX; ++j) s[j] = L::dot_u8s8_at(s[j], code, a[j * ldx].q + 4 * q);
  }
}

// The signed integer sums of all 4 blocks 4·hb + G of a half super-block at once, for one or two activation rows:
// each quad step loads the two ql quads and the qh quad once for the 4 blocks (the per-block order loads them 8 times).
template <int NX>
[[gnu::always_inline]] inline void q6_k_quarter_sums(const uint8_t* low, const uint8_t* high, const ActBlockQ8* a,
                                                     int64_t ldx, L::I (&s)[4][2][NX]) {
  for (int g = 0; g < 4; ++g) start_biased_sums<NX, 32>(a + g, ldx, s[g][0], s[g][1]);
  constexpr int kOdd = 8 * 4 * kGroupRows;  // from the ql quads of blocks 0, 2 to those of blocks 1, 3
#pragma GCC unroll 8
  for (int q = 0; q < 8; ++q) {
    prefetch_ahead<kQ6_KAhead>(low + q * 4 * kGroupRows);
    prefetch_ahead<kQ6_KAhead>(low + kOdd + q * 4 * kGroupRows);
    if (q % 2 == 0) prefetch_ahead<kQ6_KAhead>(high + q * 4 * kGroupRows);
    const L::I ql0 = L::quads(low + q * 4 * kGroupRows), ql1 = L::quads(low + kOdd + q * 4 * kGroupRows);
    const L::I qh = L::quads(high + q * 4 * kGroupRows);
    const L::I code[4] = {q6_k_codes<0>(ql0, qh), q6_k_codes<1>(ql1, qh), q6_k_codes<2>(ql0, qh),
                          q6_k_codes<3>(ql1, qh)};
#pragma GCC unroll 4
    for (int g = 0; g < 4; ++g)
#pragma GCC unroll 2
      for (int j = 0; j < NX; ++j) s[g][q / 4][j] = L::dot_u8s8_at(s[g][q / 4][j], code[g], a[j * ldx + g].q + 4 * q);
  }
}

// acc[j] += Q3_K block b's signed sums (start_biased_sums): per 16-element half the sum times the half's
// signed scale, both halves added in int32, then acc = fma(isum, d · a.d, acc).
template <int NX>
[[gnu::always_inline]] inline void signed_scale_into(const L::I (&s0)[NX], const L::I (&s1)[NX], L::I sc0, L::I sc1,
                                                     L::F d, const ActBlockQ8* a, int64_t ldx, L::F (&acc)[NX]) {
#pragma GCC unroll 8
  for (int j = 0; j < NX; ++j) {
    const L::I isum = L::add(L::mullo(sc0, s0[j]), L::mullo(sc1, s1[j]));
    acc[j] = L::fma(L::cvt(isum), L::mul(d, L::fset1(a[j * ldx].d)), acc[j]);
  }
}

// Q6_K block a's scaled half sums in float, as the scalar kernel computes them: t = fma(s1, d·sc1, s0 · (d·sc0)) (the
// products d·sc are exact), then acc = fma(t, a.d, acc); scaling the halves in int32 would take two vpmulld, each two
// vector-port operations, per half and row.
[[gnu::always_inline]] inline L::F q6_k_half0(L::I s0, L::F dsc0) { return L::mul(L::cvt(s0), dsc0); }
[[gnu::always_inline]] inline L::F q6_k_scaled_into(L::F t0, L::I s1, L::F dsc1, const ActBlockQ8& a, L::F acc) {
  return L::fma(L::fma(L::cvt(s1), dsc1, t0), L::fset1(a.d), acc);
}

// Adds Q6_K activation block 4·hb + G (low: its ql quads, high: the half super-block's qh quads) into acc, both
// halves' sums in registers. No 16-row tile: with both halves' chains of 16 rows the register file overflows, and
// keeping half 0's scaled sums in an L1 buffer instead is slower than two calls of 8. The 4 × 4 tile of
// qdot_wide_tile.h fares no better: faster than two calls of 8 with the weights in L1, slower from DRAM, where decode
// reads them (`gemm/q6_k_r16/8960x1536/n16/t1`).
template <int NX, int G>
[[gnu::always_inline]] inline void q6_k_block_into(const uint8_t* low, const uint8_t* high, const ActBlockQ8* a,
                                                   int64_t ldx, L::F dsc0, L::F dsc1, L::F (&acc)[NX]) {
  L::I s0[NX], s1[NX];
  q6_k_half_sums<NX, G>(low, high, a, ldx, 0, s0);
  q6_k_half_sums<NX, G>(low, high, a, ldx, 1, s1);
  for (int j = 0; j < NX; ++j) acc[j] = q6_k_scaled_into(q6_k_half0(s0[j], dsc0), s1[j], dsc1, a[j * ldx], acc[j]);
}

// Q6_K: blocks in order, each added as q6_k_scaled_into says. Their sums come from q6_k_quarter_sums for one or two
// activation rows (4 blocks at a time), from q6_k_block_into for more.
template <int NX>
void q6_k_r16_dot_nx(const uint8_t* w, const ActBlockQ8* x, int64_t ldx, int64_t in, float* out) {
  constexpr int kBlock = kGroupRows * 210, kScales = 2 * kGroupRows, kLow = 18 * kGroupRows;
  constexpr int kHigh = kLow + 128 * kGroupRows;
  for (int h = 0; h < kHalves; ++h) {
    L::F acc[NX];
    for (auto& v : acc) v = L::fzero();
    for (int64_t sb = 0; sb < in / 256; ++sb) {
      const uint8_t* blk = w + sb * kBlock;
      const ActBlockQ8* xs = x + 8 * sb;
      const L::F d = L::f16(blk + 2 * h * L::kRows);
      const auto dsc = [&](int k) {
        return L::mul(d, L::cvt(L::bytes_i8(blk + kScales + k * kGroupRows + h * L::kRows)));
      };
      for (int hb = 0; hb < 2; ++hb) {
        const uint8_t* low = blk + kLow + (16 * hb * kGroupRows + h * L::kRows) * 4;
        const uint8_t* high = blk + kHigh + (8 * hb * kGroupRows + h * L::kRows) * 4;
        const int b0 = 4 * hb;
        if constexpr (NX <= 2) {
          L::I s[4][2][NX];
          q6_k_quarter_sums<NX>(low, high, xs + b0, ldx, s);
          for (int g = 0; g < 4; ++g) {
            const L::F dsc0 = dsc(2 * (b0 + g)), dsc1 = dsc(2 * (b0 + g) + 1);
            for (int j = 0; j < NX; ++j)
              acc[j] = q6_k_scaled_into(q6_k_half0(s[g][0][j], dsc0), s[g][1][j], dsc1, xs[b0 + g + j * ldx], acc[j]);
          }
        } else {
          constexpr int kOdd = 8 * 4 * kGroupRows;  // from the ql quads of blocks 0, 2 to those of blocks 1, 3
          q6_k_block_into<NX, 0>(low, high, xs + b0, ldx, dsc(2 * b0), dsc(2 * b0 + 1), acc);
          q6_k_block_into<NX, 1>(low + kOdd, high, xs + b0 + 1, ldx, dsc(2 * b0 + 2), dsc(2 * b0 + 3), acc);
          q6_k_block_into<NX, 2>(low, high, xs + b0 + 2, ldx, dsc(2 * b0 + 4), dsc(2 * b0 + 5), acc);
          q6_k_block_into<NX, 3>(low + kOdd, high, xs + b0 + 3, ldx, dsc(2 * b0 + 6), dsc(2 * b0 + 7), acc);
        }
      }
    }
    for (int j = 0; j < NX; ++j) L::store(out + j * kGroupRows + h * L::kRows, acc[j]);
  }
}

// The 16 signed Q3_K scales of the 16 rows of a group super-block (scale bytes as [byte i][row] at p), unpacked as
// quant_k::q3_k_scale does for one row: low 4 bits from the nibbles of bytes 0..7 (low nibbles for k < 8), high 2 bits
// from bits 2·(k / 4) of byte 8 + k % 4, minus 32: sc[k][r].
inline void q3_k_group_scales(const uint8_t* p, int8_t sc[16][kGroupRows]) {
  B16::V b[12];
  for (int i = 0; i < 12; ++i) b[i] = B16::load(p + i * kGroupRows);
  for (int k = 0; k < 16; ++k) {
    const B16::V low = B16::and8(k < 8 ? b[k] : B16::srl16<4>(b[k - 8]), 15);
    const B16::V high = B16::and8(B16::srl16(b[8 + k % 4], 2 * (k / 4)), 3);
    B16::store(sc[k], B16::sub8(B16::or_(low, B16::sll16<4>(high)), 32));
  }
}

// The integer sums of activation blocks 4·hb + j0 .. 4·hb + j0 + NJ − 1 of a Q2_K / Q3_K group super-block over their
// two 16-element halves (quads 0..3, 4..7): block 4·hb + j takes bits 2j of the qs quads at qs and (Q3_K) bit
// 4·hb + j of the hmask quads at hm as its 4s bit; Q3_K's sums are signed (start_biased_sums). Each quad is loaded
// once for the NJ blocks.
template <int NX, int NJ, bool kQ3>
[[gnu::always_inline]] inline void q23_k_block_sums(const uint8_t* qs, const uint8_t* hm, int hb, int j0,
                                                    const ActBlockQ8* a, int64_t ldx, L::I (&s)[NJ][2][NX]) {
  for (int jj = 0; jj < NJ; ++jj) start_biased_sums<NX, kQ3 ? 4 : 0>(a + j0 + jj, ldx, s[jj][0], s[jj][1]);
#pragma GCC unroll 8
  for (int q = 0; q < 8; ++q) {
    prefetch_ahead(qs + q * 4 * kGroupRows);
    const L::I raw = L::quads(qs + q * 4 * kGroupRows);
    L::I high = L::zero();
    if constexpr (kQ3) {
      if (hb == 0) prefetch_ahead(hm + q * 4 * kGroupRows);
      high = L::quads(hm + q * 4 * kGroupRows);
    }
#pragma GCC unroll 4
    for (int jj = 0; jj < NJ; ++jj) {
      const int j = j0 + jj;
      L::I code = L::and8(L::srl16(raw, 2 * j), 3);
      if constexpr (kQ3) {
        const int bit = 4 * hb + j;
        code = L::or_(code, L::and8(bit >= 2 ? L::srl16(high, bit - 2) : L::sll16(high, 2 - bit), 4));
      }
#pragma GCC unroll 8
      for (int x = 0; x < NX; ++x) s[jj][q / 4][x] = L::dot_u8s8_at(s[jj][q / 4][x], code, a[x * ldx + j].q + 4 * q);
    }
  }
}

// acc[j] += Q2_K block b's sums: isc = Σ over both halves of sc·(Σ code·a.q), imin = Σ m·Σ a.q in int32, then
// acc = fma(isc, d · a.d, acc), acc = fma(imin, dmin · −a.d, acc). raw0, raw1: the halves' scale bytes (scale in the
// low nibble, min in the high one) of 8 or 16 rows.
template <int NX>
[[gnu::always_inline]] inline void q2_k_scale_into(const L::I (&s0)[NX], const L::I (&s1)[NX], L::I raw0, L::I raw1,
                                                   L::F d, L::F dmin, const ActBlockQ8* a, int64_t ldx,
                                                   L::F (&acc)[NX]) {
  const L::I sc0 = L::and8(raw0, 0x0F), sc1 = L::and8(raw1, 0x0F), m0 = L::srl16<4>(raw0), m1 = L::srl16<4>(raw1);
#pragma GCC unroll 8
  for (int j = 0; j < NX; ++j) {
    const ActBlockQ8& aj = a[j * ldx];
    const L::I isc = L::add(L::mullo(sc0, s0[j]), L::mullo(sc1, s1[j]));
    const L::I imin = L::add(L::mullo(m0, L::set1(aj.sum[0])), L::mullo(m1, L::set1(aj.sum[1])));
    acc[j] = L::fma(L::cvt(isc), L::mul(d, L::fset1(aj.d)), acc[j]);
    acc[j] = L::fma(L::cvt(imin), L::mul(dmin, L::fset1(-aj.d)), acc[j]);
  }
}

// Q2_K and Q3_K: blocks in order, each added as q2_k_scale_into / signed_scale_into<NX> say; their sums come from
// q23_k_block_sums four blocks at a time (one load of each quad) for one or two activation rows, block by block for
// more.
template <int NX, bool kQ3>
void q23_k_r16_dot_nx(const uint8_t* w, const ActBlockQ8* x, int64_t ldx, int64_t in, float* out) {
  constexpr int kBlock = kGroupRows * (kQ3 ? 110 : 84), kScales = (kQ3 ? 2 : 4) * kGroupRows;
  constexpr int kHigh = 14 * kGroupRows, kCodes = (kQ3 ? 46 : 20) * kGroupRows;
  alignas(16) int8_t sc3[16][kGroupRows];
  for (int h = 0; h < kHalves; ++h) {
    L::F acc[NX];
    for (auto& a : acc) a = L::fzero();
    for (int64_t sb = 0; sb < in / 256; ++sb) {
      const uint8_t* blk = w + sb * kBlock;
      const ActBlockQ8* xs = x + 8 * sb;
      if constexpr (kQ3) q3_k_group_scales(blk + kScales, sc3);
      const L::F d = L::f16(blk + 2 * h * L::kRows);
      const L::F dmin = kQ3 ? L::fzero() : L::f16(blk + 2 * kGroupRows + 2 * h * L::kRows);
      const uint8_t* hm = blk + kHigh + h * L::kRows * 4;
      const auto add_block = [&](int b, const L::I(&s0)[NX], const L::I(&s1)[NX]) {
        if constexpr (kQ3) {
          signed_scale_into<NX>(s0, s1, L::bytes_i8(reinterpret_cast<const uint8_t*>(sc3[2 * b] + h * L::kRows)),
                                L::bytes_i8(reinterpret_cast<const uint8_t*>(sc3[2 * b + 1] + h * L::kRows)), d, xs + b,
                                ldx, acc);
        } else {
          const uint8_t* raw = blk + kScales + h * L::kRows;
          q2_k_scale_into<NX>(s0, s1, L::bytes_u8(raw + 2 * b * kGroupRows),
                              L::bytes_u8(raw + (2 * b + 1) * kGroupRows), d, dmin, xs + b, ldx, acc);
        }
      };
      for (int hb = 0; hb < 2; ++hb) {
        const uint8_t* qs = blk + kCodes + (8 * hb * kGroupRows + h * L::kRows) * 4;
        if constexpr (NX <= 2) {
          L::I s[4][2][NX];
          q23_k_block_sums<NX, 4, kQ3>(qs, hm, hb, 0, xs + 4 * hb, ldx, s);
          for (int j = 0; j < 4; ++j) add_block(4 * hb + j, s[j][0], s[j][1]);
        } else {
          for (int j = 0; j < 4; ++j) {
            L::I s[1][2][NX];
            q23_k_block_sums<NX, 1, kQ3>(qs, hm, hb, j, xs + 4 * hb, ldx, s);
            add_block(4 * hb + j, s[0][0], s[0][1]);
          }
        }
      }
    }
    for (int j = 0; j < NX; ++j) L::store(out + j * kGroupRows + h * L::kRows, acc[j]);
  }
}

// The 8 sub-block scales less 32 of the 16 rows of a packed IQ4_XS super-block (scales_h as [row][2 bytes] at p, then
// scales_l as [byte k][row]): ls[s][r] = low nibble s % 2 of scales_l byte s / 2 | bits 2s, 2s + 1 of scales_h << 4.
inline void iq4_xs_group_scales(const uint8_t* p, int8_t ls[8][kGroupRows]) {
  const B16::V h0 = B16::load(p), h1 = B16::load(p + 16);
  for (int s = 0; s < 8; ++s) {
    const B16::V l = B16::load(p + 2 * kGroupRows + (s / 2) * kGroupRows);
    const B16::V low = B16::and8(s % 2 ? B16::srl16<4>(l) : l, 15);
    const B16::V high = B16::narrow16(B16::and16(B16::srl16(h0, 2 * s), 3), B16::and16(B16::srl16(h1, 2 * s), 3));
    B16::store(ls[s], B16::sub8(B16::or_(low, B16::sll16<4>(high)), 32));
  }
}

// IQ4_XS: per sub-block s (activation block 8·sb + s) an IQ4_NL stretch of quads 4s .. 4s + 3 with scale d · (ls − 32).
template <int NX>
void iq4_xs_r16_dot_nx(const uint8_t* w, const ActBlockQ8* x, int64_t ldx, int64_t in, float* out) {
  constexpr int kBlock = kGroupRows * 136, kScales = 2 * kGroupRows, kCodes = 8 * kGroupRows;
  const IQ4Levels levels;
  alignas(16) int8_t ls[8][kGroupRows];
  for (int h = 0; h < kHalves; ++h) {
    L::F acc[NX];
    for (auto& a : acc) a = L::fzero();
    for (int64_t sb = 0; sb < in / 256; ++sb) {
      const uint8_t* blk = w + sb * kBlock;
      const ActBlockQ8* xs = x + 8 * sb;
      iq4_xs_group_scales(blk + kScales, ls);
      const L::F d = L::f16(blk + 2 * h * L::kRows);
      for (int s = 0; s < 8; ++s) {
        L::I sums[1][NX];
        nibble_block_sums<NX, 1>(levels, blk + kCodes + (4 * s * kGroupRows + h * L::kRows) * 4, 0, xs + s, ldx, sums);
        const L::F dl = L::mul(d, L::cvt(L::bytes_i8(reinterpret_cast<const uint8_t*>(ls[s] + h * L::kRows))));
        for (int j = 0; j < NX; ++j)
          acc[j] = L::fma(L::cvt(sums[0][j]), L::mul(dl, L::fset1(xs[j * ldx + s].d)), acc[j]);
      }
    }
    for (int j = 0; j < NX; ++j) L::store(out + j * kGroupRows + h * L::kRows, acc[j]);
  }
}

template <int NX>
struct Q8_0R16Dot16 {
  static void run(const uint8_t* w, const ActBlockQ16* x, const float* xd, int64_t ldx, int64_t in, float* out) {
    q8_0_r16_dot16_nx<NX>(w, x, xd, ldx, in, out);
  }
};

// The kernels of the 32-element block layouts behind QDotFn: G groups at once.
template <class Codes, int G = 1>
struct Block32Dot {
  template <int NX>
  struct K {
    static void run(const uint8_t* w, const ActBlockQ8* x, int64_t ldx, int64_t in, float* out) {
      block32_r16_dot_nx<NX, G, Codes>(w, x, ldx, in, out);
    }
  };
};

template <int NX>
struct Q4_KR16Dot {
  static void run(const uint8_t* w, const ActBlockQ8* x, int64_t ldx, int64_t in, float* out) {
    q45_k_r16_dot_nx<NX, false>(w, x, ldx, in, out);
  }
};

template <int NX>
struct Q5_KR16Dot {
  static void run(const uint8_t* w, const ActBlockQ8* x, int64_t ldx, int64_t in, float* out) {
    q45_k_r16_dot_nx<NX, true>(w, x, ldx, in, out);
  }
};

template <int NX>
struct Q6_KR16Dot {
  static void run(const uint8_t* w, const ActBlockQ8* x, int64_t ldx, int64_t in, float* out) {
    q6_k_r16_dot_nx<NX>(w, x, ldx, in, out);
  }
};

template <int NX>
struct Q2_KR16Dot {
  static void run(const uint8_t* w, const ActBlockQ8* x, int64_t ldx, int64_t in, float* out) {
    q23_k_r16_dot_nx<NX, false>(w, x, ldx, in, out);
  }
};

template <int NX>
struct Q3_KR16Dot {
  static void run(const uint8_t* w, const ActBlockQ8* x, int64_t ldx, int64_t in, float* out) {
    q23_k_r16_dot_nx<NX, true>(w, x, ldx, in, out);
  }
};

template <int NX>
struct IQ4_XSR16Dot {
  static void run(const uint8_t* w, const ActBlockQ8* x, int64_t ldx, int64_t in, float* out) {
    iq4_xs_r16_dot_nx<NX>(w, x, ldx, in, out);
  }
};

// The kernels against 8-bit activations (every packed type but Q8_0's 16-bit form).
inline void register_qdot_groups_int8(QDotKernels& k) {
  k.dot[static_cast<int>(DType::kQ4_0_R16)] = dot_any_nx<Block32Dot<Q4_0Nibbles>::K>;
  // Two groups at a time pay where one vector holds a group's 16 rows and the registers hold two groups' chains.
  if constexpr (L::kPairs) {
    k.dot_pair[static_cast<int>(DType::kQ4_0_R16)] = dot_any_nx<Block32Dot<Q4_0Nibbles, 2>::K>;
  }
  k.dot[static_cast<int>(DType::kQ4_K_R16)] = dot_any_nx<Q4_KR16Dot>;
  k.dot[static_cast<int>(DType::kQ5_K_R16)] = dot_any_nx<Q5_KR16Dot>;
  k.dot[static_cast<int>(DType::kQ6_K_R16)] = dot_any_nx<Q6_KR16Dot>;
  k.dot[static_cast<int>(DType::kQ2_K_R16)] = dot_any_nx<Q2_KR16Dot>;
  k.dot[static_cast<int>(DType::kQ3_K_R16)] = dot_any_nx<Q3_KR16Dot>;
  k.dot[static_cast<int>(DType::kIQ4_NL_R16)] = dot_any_nx<Block32Dot<IQ4Levels>::K>;
  k.dot[static_cast<int>(DType::kIQ4_XS_R16)] = dot_any_nx<IQ4_XSR16Dot>;
  k.dot[static_cast<int>(DType::kQ8_0_R16_I8)] = dot_any_nx<Block32Dot<Q8Bytes>::K>;
  if constexpr (L::kPairs) k.dot_pair[static_cast<int>(DType::kQ8_0_R16_I8)] = dot_any_nx<Block32Dot<Q8Bytes, 2>::K>;
}

// Everything: a template so that it compiles only where called (not with row_lanes_sve.h).
template <class Lanes = L>
void register_qdot_groups_simd(QDotKernels& k) {
  k.dot16[static_cast<int>(DType::kQ8_0_R16)] = dot16_any_nx<Q8_0R16Dot16>;
  register_qdot_groups_int8(k);
}

}  // namespace
}  // namespace cai::hal::cpu
