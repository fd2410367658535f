// Integer stage of the GEMM decoders for the grid IQ types (IQ2_*, IQ3_*, IQ1_*): chunk c is sub-block c; its grid
// entries are fetched by index, signs applied as byte masks, and the f32 sub-block scales computed in the scalar
// reference's order (core/quant_iq.h). Same contract and linkage as gemm_codes_avx2.h.
#pragma once

#include "hal/cpu/kernels/gemm_codes_avx2.h"

namespace cai::hal::cpu::qc {
namespace {

using quant_grids::kIq1s;
using quant_grids::kIq2s;
using quant_grids::kIq2xs;
using quant_grids::kIq2xxs;
using quant_grids::kIq3s;
using quant_grids::kIq3xxs;

// The sign byte of every 7-bit sign index, so a lookup replaces the parity count (no popcnt in the AVX2 baseline).
struct SignTable {
  uint8_t v[128];
};
inline constexpr SignTable kSigns = [] {
  SignTable t{};
  for (int i = 0; i < 128; ++i) t.v[i] = quant_grids::iq_signs(i);
  return t;
}();

// Four 8-element grid entries (one per group of the chunk) as 32 bytes.
inline __m256i grid4(const uint64_t* grid, int i0, int i1, int i2, int i3) {
  return _mm256_setr_epi64x(static_cast<long long>(grid[i0]), static_cast<long long>(grid[i1]),
                            static_cast<long long>(grid[i2]), static_cast<long long>(grid[i3]));
}

// Eight 4-element grid entries: entry k has index lo[k] | bit k of hi << 8. Scalar loads beat vpgatherdd here.
inline __m256i grid8(const uint32_t* grid, const uint8_t* lo, int hi = 0) {
  auto g = [&](int k) { return static_cast<int>(grid[lo[k] | (((hi >> k) & 1) << 8)]); };
  return _mm256_setr_epi32(g(0), g(1), g(2), g(3), g(4), g(5), g(6), g(7));
}

// The sign bytes of four 7-bit sign indices packed at bits 0, 7, 14, 21 of w, as one 32-bit element mask.
inline uint32_t signs4(uint32_t w) {
  return kSigns.v[w & 127] | (kSigns.v[(w >> 7) & 127] << 8) | (kSigns.v[(w >> 14) & 127] << 16) |
         (static_cast<uint32_t>(kSigns.v[(w >> 21) & 127]) << 24);
}

// IQ2 / IQ3_XXS scales of 8 integer ls: (d·(0.5 + ls))·post.
inline __m256 half_step_scales(float d, __m256i ls, float post) {
  const __m256 x = _mm256_add_ps(_mm256_set1_ps(0.5f), i32_to_ps(ls));
  return _mm256_mul_ps(_mm256_mul_ps(_mm256_set1_ps(d), x), _mm256_set1_ps(post));
}

// IQ2_XS / IQ2_S: one scale byte per sub-block, low nibble for its first 16 elements, high nibble for the last 16.
inline Scales16 iq2_nibble_scales(float d, const uint8_t* scales) {
  Scales16 h;
  const __m128i v = _mm_loadl_epi64(reinterpret_cast<const __m128i*>(scales)), nib = _mm_set1_epi8(15);
  const __m128i ls = _mm_unpacklo_epi8(_mm_and_si128(v, nib), _mm_and_si128(_mm_srli_epi16(v, 4), nib));
  _mm256_storeu_ps(h.s, half_step_scales(d, _mm256_cvtepu8_epi32(ls), 0.25f));
  _mm256_storeu_ps(h.s + 8, half_step_scales(d, _mm256_cvtepu8_epi32(_mm_srli_si128(ls, 8)), 0.25f));
  return h;
}

// IQ2_XXS: 8-byte record per sub-block: 4 kIq2xxs indices, then u32 w (sign indices, scale in bits 28..31).
struct IQ2XXS {
  static constexpr int kChunks = 8, kBytes = 66;
  static constexpr bool kAffine = false;
  using Hdr = Scales8;
  static Hdr header(const uint8_t* b) {
    Hdr h;
    // The odd u32 of the 16 in the records are the w words: records 0,1,4,5 | 2,3,6,7 after the shuffle.
    const __m256 r0 = _mm256_loadu_ps(reinterpret_cast<const float*>(b + 2));
    const __m256 r1 = _mm256_loadu_ps(reinterpret_cast<const float*>(b + 34));
    const __m256i w = _mm256_permute4x64_epi64(_mm256_castps_si256(_mm256_shuffle_ps(r0, r1, 0xDD)), 0xD8);
    _mm256_storeu_ps(h.s, half_step_scales(f16_at(b), _mm256_srli_epi32(w, 28), 0.25f));
    return h;
  }
  [[gnu::always_inline]] static Chunk chunk(const uint8_t* b, const Hdr& h, int c) {
    const uint8_t* r = b + 2 + 8 * c;
    const __m256i g = grid4(kIq2xxs, r[0], r[1], r[2], r[3]);
    return uniform(negate_where(g, bit_bytes(signs4(load_u32(r + 4)))), h.s[c]);
  }
};

// IQ2_XS: u16 per group (9-bit kIq2xs index, 7-bit sign index); groups 0,1 use the low scale nibble, 2,3 the high.
struct IQ2XS {
  static constexpr int kChunks = 8, kBytes = 74;
  static constexpr bool kAffine = false;
  using Hdr = Scales16;
  static Hdr header(const uint8_t* b) { return iq2_nibble_scales(f16_at(b), b + 66); }
  [[gnu::always_inline]] static Chunk chunk(const uint8_t* b, const Hdr& h, int c) {
    uint16_t v[4];
    std::memcpy(v, b + 2 + 8 * c, 8);
    const __m256i g = grid4(kIq2xs, v[0] & 511, v[1] & 511, v[2] & 511, v[3] & 511);
    const uint32_t s = kSigns.v[v[0] >> 9] | (kSigns.v[v[1] >> 9] << 8) | (kSigns.v[v[2] >> 9] << 16) |
                       (static_cast<uint32_t>(kSigns.v[v[3] >> 9]) << 24);
    return halves(negate_where(g, bit_bytes(s)), h, c);
  }
};

// IQ2_S: index bits 0..7 in qs, bits 8..9 of group l in bits 2l..2l+1 of qh[c]; full sign bytes; scales as IQ2_XS.
struct IQ2S {
  static constexpr int kChunks = 8, kBytes = 82;
  static constexpr bool kAffine = false;
  using Hdr = Scales16;
  static Hdr header(const uint8_t* b) { return iq2_nibble_scales(f16_at(b), b + 74); }
  [[gnu::always_inline]] static Chunk chunk(const uint8_t* b, const Hdr& h, int c) {
    const uint8_t* qs = b + 2 + 4 * c;
    const int qh = b[66 + c];
    const __m256i g = grid4(kIq2s, qs[0] | ((qh << 8) & 0x300), qs[1] | ((qh << 6) & 0x300),
                            qs[2] | ((qh << 4) & 0x300), qs[3] | ((qh << 2) & 0x300));
    return halves(negate_where(g, bit_bytes(load_u32(b + 34 + 4 * c))), h, c);
  }
};

// IQ3_XXS: 8 kIq3xxs indices per sub-block; u32 w per sub-block at 66 (sign indices, scale in bits 28..31).
struct IQ3XXS {
  static constexpr int kChunks = 8, kBytes = 98;
  static constexpr bool kAffine = false;
  using Hdr = Scales8;
  static Hdr header(const uint8_t* b) {
    Hdr h;
    const __m256i w = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(b + 66));
    _mm256_storeu_ps(h.s, half_step_scales(f16_at(b), _mm256_srli_epi32(w, 28), 0.5f));
    return h;
  }
  [[gnu::always_inline]] static Chunk chunk(const uint8_t* b, const Hdr& h, int c) {
    return uniform(negate_where(grid8(kIq3xxs, b + 2 + 8 * c), bit_bytes(signs4(load_u32(b + 66 + 4 * c)))), h.s[c]);
  }
};

// IQ3_S: index k of sub-block c is qs[8c + k] | bit k of qh[c] << 8; full sign bytes; dl = d·(1 + 2·nibble).
struct IQ3S {
  static constexpr int kChunks = 8, kBytes = 110;
  static constexpr bool kAffine = false;
  using Hdr = Scales8;
  static Hdr header(const uint8_t* b) {
    Hdr h;
    const __m256i odd = _mm256_add_epi32(_mm256_slli_epi32(nibbles8(b + 106), 1), _mm256_set1_epi32(1));
    _mm256_storeu_ps(h.s, _mm256_mul_ps(_mm256_set1_ps(f16_at(b)), i32_to_ps(odd)));
    return h;
  }
  [[gnu::always_inline]] static Chunk chunk(const uint8_t* b, const Hdr& h, int c) {
    return uniform(negate_where(grid8(kIq3s, b + 2 + 8 * c, b[66 + c]), bit_bytes(load_u32(b + 74 + 4 * c))), h.s[c]);
  }
};

// IQ1: x = dl·(g + δ) with g ∈ {−1, 0, 1} and δ = ±1/8 is computed as (dl/8)·(8g ± 1): dl/8 is exact (|dl| is 0 or
// at least 2^-24, far above the f32 subnormals) and so is 8g ± 1, so the single rounded product is the reference's.
inline __m256i iq1_codes(__m256i grid, __m256i delta) {
  return _mm256_add_epi8(_mm256_sign_epi8(_mm256_set1_epi8(8), grid), delta);
}
inline __m256i iq1_delta(bool neg) { return _mm256_set1_epi8(neg ? -1 : 1); }
// The matching scales dl/8 = (d·(2·ls + 1))·0.125 of 8 integer ls.
inline __m256 iq1_scales(float d, __m256i ls) {
  const __m256i odd = _mm256_add_epi32(_mm256_slli_epi32(ls, 1), _mm256_set1_epi32(1));
  return _mm256_mul_ps(_mm256_mul_ps(_mm256_set1_ps(d), i32_to_ps(odd)), _mm256_set1_ps(0.125f));
}

// IQ1_S: u16 qh[c] at 34: bits 3l..3l+2 index bits 8..10 of group l, 12..14 the scale, 15 the delta sign.
struct IQ1S {
  static constexpr int kChunks = 8, kBytes = 50;
  static constexpr bool kAffine = false;
  using Hdr = Scales8;
  static Hdr header(const uint8_t* b) {
    Hdr h;
    const __m256i qh = _mm256_cvtepu16_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(b + 34)));
    const __m256i ls = _mm256_and_si256(_mm256_srli_epi32(qh, 12), _mm256_set1_epi32(7));
    _mm256_storeu_ps(h.s, iq1_scales(f16_at(b), ls));
    return h;
  }
  [[gnu::always_inline]] static Chunk chunk(const uint8_t* b, const Hdr& h, int c) {
    const uint8_t* qs = b + 2 + 4 * c;
    const int qh = load_u16(b + 34 + 2 * c);
    const __m256i g = grid4(kIq1s, qs[0] | ((qh << 8) & 0x700), qs[1] | ((qh << 5) & 0x700),
                            qs[2] | ((qh << 2) & 0x700), qs[3] | ((qh >> 1) & 0x700));
    return uniform(iq1_codes(g, iq1_delta(qh & 0x8000)), h.s[c]);
  }
};

// IQ1_M: one nibble per group in qh (index bits 8..10, delta sign in bit 3); d is spread over the top nibbles of the
// four u16 scale words at 48, which also hold two 3-bit scales per sub-block (first and last 16 elements).
struct IQ1M {
  static constexpr int kChunks = 8, kBytes = 56;
  static constexpr bool kAffine = false;
  using Hdr = Scales16;
  static Hdr header(const uint8_t* b) {
    Hdr h;
    uint16_t sc[4];
    std::memcpy(sc, b + 48, 8);
    const float d = _cvtsh_ss(
        static_cast<uint16_t>((sc[0] >> 12) | ((sc[1] >> 8) & 0xF0) | ((sc[2] >> 4) & 0xF00) | (sc[3] & 0xF000)));
    // Scale k = 2c + half sits in word k/4 at bit 3(k%4).
    const __m256i words = _mm256_cvtepu16_epi32(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(sc)));
    const __m256i shift = _mm256_setr_epi32(0, 3, 6, 9, 0, 3, 6, 9), seven = _mm256_set1_epi32(7);
    for (int i = 0; i < 2; ++i) {
      const __m256i w = _mm256_permutevar8x32_epi32(
          words, _mm256_setr_epi32(2 * i, 2 * i, 2 * i, 2 * i, 2 * i + 1, 2 * i + 1, 2 * i + 1, 2 * i + 1));
      _mm256_storeu_ps(h.s + 8 * i, iq1_scales(d, _mm256_and_si256(_mm256_srlv_epi32(w, shift), seven)));
    }
    return h;
  }
  [[gnu::always_inline]] static Chunk chunk(const uint8_t* b, const Hdr& h, int c) {
    const uint8_t* qs = b + 4 * c;
    const int q0 = b[32 + 2 * c], q1 = b[33 + 2 * c];
    const __m256i g = grid4(kIq1s, qs[0] | ((q0 << 8) & 0x700), qs[1] | ((q0 << 4) & 0x700),
                            qs[2] | ((q1 << 8) & 0x700), qs[3] | ((q1 << 4) & 0x700));
    auto delta = [](int nib) { return static_cast<long long>((nib & 8) ? ~0ull : 0x0101010101010101ull); };
    const __m256i dv = _mm256_setr_epi64x(delta(q0), delta(q0 >> 4), delta(q1), delta(q1 >> 4));
    return halves(iq1_codes(g, dv), h, c);
  }
};

}  // namespace
}  // namespace cai::hal::cpu::qc
