// The 16-row tiles of the packed 32-element block layouts (dot_wide: Q4_0, IQ4_NL, and Q8_0 for 8-bit activations),
// for AVX-512 VNNI only: their 16 int32 sums per block take half of its 32 vector registers (AVX2 has 16 in all).
//
// A product's 16 lanes are a 4 × 4 block: lane 4m + i holds weight row 4G + m times activation row 4H + i. Four weight
// vectors (one vpshufd each from the group's codes, transposed once per code load) and four activation vectors (one
// 128-bit broadcast load each, from ActWideBlock) feed the 16 products of a quad, where a tile over the one-row
// layout takes one broadcast load per product. The scales meet the sums the same way, so every output gets the
// one-row kernel's int32 sums, float multiply and fused multiply-add: the same bits. Per block and 16 × 16 outputs
// that is 128 vpdpbusd beside 16 vmulps and 16 vfmadd on the same two ports, the bound of either form: with the
// weights in L1 this tile and a tile over the one-row layout both issue vpdpbusd close to that bound on a Zen 5 core;
// from DRAM, where decode reads the weights, this one is faster (`gemm/q4_0_r16/8960x1536/n16/t1`). Included by
// qdot_simd_table.h; internal linkage.
#pragma once

#include "hal/cpu/kernels/qdot_groups_simd.h"

namespace cai::hal::cpu {
namespace {

#if defined(__AVX512VNNI__) && defined(__AVX512BW__)

// The 16 bytes at p in each 128-bit lane.
inline __m512i lanes_of_16(const void* p) {
  return _mm512_broadcast_i32x4(_mm_load_si128(static_cast<const __m128i*>(p)));
}

// Dword 4i + m of the result is dword 4m + i of v: weight row 4G + m moves to 128-bit lane m, position G.
inline __m512i transpose_4x4(__m512i v) {
  return _mm512_permutexvar_epi32(_mm512_setr_epi32(0, 4, 8, 12, 1, 5, 9, 13, 2, 6, 10, 14, 3, 7, 11, 15), v);
}

// The same for 16 floats in row order: lane 4i + m of the result holds row 4m + i.
inline __m512 transpose_4x4(__m512 v) { return _mm512_castsi512_ps(transpose_4x4(_mm512_castps_si512(v))); }

// Of a transposed vector of 16 rows, rows 4G .. 4G + 3 spread over the 4 rows of each activation lane.
inline void spread_rows(__m512 v_t, __m512 (&out)[4]) {
  out[0] = _mm512_permute_ps(v_t, 0x00);
  out[1] = _mm512_permute_ps(v_t, 0x55);
  out[2] = _mm512_permute_ps(v_t, 0xAA);
  out[3] = _mm512_permute_ps(v_t, 0xFF);
}

// Each s[G][H] started at the 4 int32 at p + 4H (activation rows 4H .. 4H + 3), times 2^shift.
template <int kShift = 0>
[[gnu::always_inline]] inline void start_wide_sums(const int32_t* p, __m512i (&s)[4][4]) {
  for (int h = 0; h < 4; ++h) {
    __m512i start = lanes_of_16(p + 4 * h);
    if constexpr (kShift > 0) start = _mm512_slli_epi32(start, kShift);
    for (int g = 0; g < 4; ++g) s[g][h] = start;
  }
}

// The products of one code quad (elements 4e .. 4e + 3 of each weight row as unsigned bytes, transposed) with quad e
// of the 16 activation rows: s[G][H] lane 4m + i gains row 4G + m · activation row 4H + i. With AVX-512 VNNI every
// layout's level product is vpdpbusd (RowLanes).
[[gnu::always_inline]] inline void wide_quad(__m512i codes_t, const ActWideBlock& a, int e, __m512i (&s)[4][4]) {
  const __m512i w[4] = {_mm512_shuffle_epi32(codes_t, _MM_PERM_AAAA), _mm512_shuffle_epi32(codes_t, _MM_PERM_BBBB),
                        _mm512_shuffle_epi32(codes_t, _MM_PERM_CCCC), _mm512_shuffle_epi32(codes_t, _MM_PERM_DDDD)};
  for (int h = 0; h < 4; ++h) {
    const __m512i x = lanes_of_16(a.q[e][4 * h]);
    for (int g = 0; g < 4; ++g) s[g][h] = L::dot_u8s8(s[g][h], w[g], x);
  }
}

// sums[G][H] lane 4m + i → out[(4H + i) · 16 + 4G + m]: per activation row, two two-source permutes and a lane
// shuffle gather its 16 rows.
inline void store_wide_sums(const float (&sums)[4][4][kGroupRows], float* out) {
  for (int h = 0; h < 4; ++h) {
    for (int i = 0; i < 4; ++i) {
      // lanes 0..3 from the first source's dwords i, 4 + i, 8 + i, 12 + i; lanes 4..7 from the second's
      const __m512i idx = _mm512_add_epi32(_mm512_setr_epi32(0, 4, 8, 12, 16, 20, 24, 28, 0, 4, 8, 12, 16, 20, 24, 28),
                                           _mm512_set1_epi32(i));
      const __m512 g01 = _mm512_permutex2var_ps(_mm512_load_ps(sums[0][h]), idx, _mm512_load_ps(sums[1][h]));
      const __m512 g23 = _mm512_permutex2var_ps(_mm512_load_ps(sums[2][h]), idx, _mm512_load_ps(sums[3][h]));
      _mm512_storeu_ps(out + (4 * h + i) * kGroupRows, _mm512_shuffle_f32x4(g01, g23, _MM_SHUFFLE(1, 0, 1, 0)));
    }
  }
}

// One group of a 32-element block layout (Codes as in block32_r16_dot_nx) times the 16 activation rows of x: blocks
// in order, each block's sums started at −kOffset · Σ q, then scaled into the float sums as the one-row kernel does.
template <class Codes>
void block32_r16_dot_wide(const uint8_t* w, const ActWideBlock* x, int64_t in, float* out) {
  static_assert(Codes::kOffset == 8 || Codes::kOffset == 128);
  constexpr int kBlock = kGroupRows * (Codes::kNibbles ? 18 : 34), kCodes = 2 * kGroupRows;
  const Codes codes;
  // 16 float sums beside 16 int32 ones and the operands would overflow the register file: they wait in L1.
  alignas(64) float sums[4][4][kGroupRows] = {};
  for (int64_t b = 0; b < in / kActBlock; ++b) {
    const ActWideBlock& a = x[b];
    const uint8_t* blk = w + b * kBlock;
    __m512i s[4][4];
    start_wide_sums<Codes::kOffset == 128 ? 4 : 0>(a.neg8_sum, s);  // −kOffset · Σ q of each activation row
    if constexpr (Codes::kNibbles) {
#pragma GCC unroll 4
      for (int v = 0; v < 4; ++v) {
        const uint8_t* at = blk + kCodes + v * kGroupRows * 4;
        prefetch_ahead(at);
        const __m512i raw = transpose_4x4(L::quads(at));
        wide_quad(codes.levels(L::and8(raw, 0x0F)), a, v, s);
        wide_quad(codes.levels(L::and8(L::srl16<4>(raw), 0x0F)), a, 4 + v, s);
      }
    } else {
#pragma GCC unroll 8
      for (int v = 0; v < kActBlock / 4; ++v) {
        const uint8_t* at = blk + kCodes + v * kGroupRows * 4;
        prefetch_ahead(at);
        wide_quad(codes.levels(transpose_4x4(L::quads(at))), a, v, s);
      }
    }
    __m512 dwg[4];
    spread_rows(transpose_4x4(L::f16(blk)), dwg);
    for (int h = 0; h < 4; ++h) {
      const __m512 d = _mm512_castsi512_ps(lanes_of_16(a.d + 4 * h));
      for (int g = 0; g < 4; ++g)
        _mm512_store_ps(sums[g][h], L::fma(L::cvt(s[g][h]), L::mul(dwg[g], d), _mm512_load_ps(sums[g][h])));
    }
  }
  store_wide_sums(sums, out);
}

inline void register_qdot_wide_simd(QDotKernels& k) {
  k.dot_wide[static_cast<int>(DType::kQ4_0_R16)] = block32_r16_dot_wide<Q4_0Nibbles>;
  k.dot_wide[static_cast<int>(DType::kIQ4_NL_R16)] = block32_r16_dot_wide<IQ4Levels>;
  k.dot_wide[static_cast<int>(DType::kQ8_0_R16_I8)] = block32_r16_dot_wide<Q8Bytes>;
}

#else

inline void register_qdot_wide_simd(QDotKernels&) {}

#endif

}  // namespace
}  // namespace cai::hal::cpu
