// Integer stage of the GEMM decoders for the GGUF types whose elements are scale·code (− offset): each decoder turns
// one 32-element chunk into 32 int8 codes plus the f32 scales (and offsets) of its two 16-element halves, with AVX2
// integer instructions. gemm_avx2.cpp and gemm_avx512.cpp widen the codes to floats in their own register width.
// Included only by those two files (AVX-512 implies AVX2); everything here has internal linkage so the copies compiled
// with different ISA flags never meet in the link. Layouts: docs/design/formats.md#quant-block-layouts and
// core/quant_iq.h.
#pragma once

#include <immintrin.h>

#include <cstdint>

#include "core/block_bytes.h"
#include "core/quant_grids.h"
#include "core/quant_k.h"
#include "hal/cpu/kernels/simd_scalars.h"

namespace cai::hal::cpu::qc {
namespace {

using block_bytes::load_u16;
using block_bytes::load_u32;

// Element i of a chunk is s[i/16]·q[i] − m[i/16] (m only when the decoder's kAffine is set). The scales are rounded
// to f32 exactly as the scalar reference rounds them and codes are small integers, so the one f32 product (and one
// subtraction) per element reproduces the reference bit for bit. For the affine types s·q is even exact (an f16 d of
// 11 significant bits times a scale of at most 4 and a code of at most 5 bits), so a compiler fusing the product and
// the subtraction into one FMA changes nothing. Grid types fold their signs into the codes: s·(−g) = −(s·g) under
// round-to-nearest-even. Every chunk() is forced inline (here and in the ISA adapters): GCC left the larger ones as
// calls in AVX-512's two-chunk loop, and a call spills all accumulators (no callee-saved vector registers).
struct Chunk {
  __m256i q;
  float s[2];
  float m[2];
};

// What a 256-element super-block's chunks share: the scale of each of its 16 halves.
struct Scales16 {
  float s[16];
};

// The same for types with one scale per 32-element sub-block.
struct Scales8 {
  float s[8];
};

// What a 32-element block's single chunk needs: its scale and offset.
struct Scale1 {
  float s, m;
};

// Q4_K / Q5_K (the float decoders of both ISA files): the scales and mins of a block's 8 sub-blocks.
struct KHdr {
  float dsc[8], dm[8];  // d·scale_s and dmin·min_s, rounded to f32 as the reference does
};

KHdr k_header(const uint8_t* b) {
  KHdr h;
  float d = f16_at(b), dmin = f16_at(b + 2);
  for (int s = 0; s < 8; ++s) {
    int sc, m;
    quant_k::scale_min(b + 4, s, &sc, &m);
    h.dsc[s] = d * static_cast<float>(sc);
    h.dm[s] = dmin * static_cast<float>(m);
  }
  return h;
}

inline Chunk uniform(__m256i q, float s, float m = 0.0f) { return {q, {s, s}, {m, m}}; }
inline Chunk halves(__m256i q, const Scales16& h, int c) { return {q, {h.s[2 * c], h.s[2 * c + 1]}, {0.0f, 0.0f}}; }

// Block scales are computed 8 or 16 at a time with the reference's f32 operations in its order: GCC's own
// vectorisation of the scalar loops cost more than decoding the chunks.
inline __m256 i32_to_ps(__m256i v) { return _mm256_cvtepi32_ps(v); }
inline __m256 i8_to_ps(__m128i v) { return i32_to_ps(_mm256_cvtepi8_epi32(v)); }

// dst[k] = d·v[k] for the 16 signed bytes of v.
inline void scale_bytes(float* dst, __m128i v, float d) {
  const __m256 dv = _mm256_set1_ps(d);
  _mm256_storeu_ps(dst, _mm256_mul_ps(dv, i8_to_ps(v)));
  _mm256_storeu_ps(dst + 8, _mm256_mul_ps(dv, i8_to_ps(_mm_srli_si128(v, 8))));
}

// The 8 nibbles of 4 bytes in order low, high, low, high, ... as 8 int32.
inline __m256i nibbles8(const uint8_t* p) {
  const __m128i v = _mm_cvtsi32_si128(static_cast<int>(load_u32(p))), nib = _mm_set1_epi8(15);
  return _mm256_cvtepu8_epi32(_mm_unpacklo_epi8(_mm_and_si128(v, nib), _mm_and_si128(_mm_srli_epi16(v, 4), nib)));
}

// 16 bytes of nibbles → 32 codes: low nibbles are elements 0..15, high nibbles 16..31.
inline __m256i split_nibbles(const uint8_t* p) {
  const __m128i q = _mm_loadu_si128(reinterpret_cast<const __m128i*>(p));
  return _mm256_and_si256(_mm256_set_m128i(_mm_srli_epi16(q, 4), q), _mm256_set1_epi8(15));
}

// Byte i is 0xFF where bit i of `bits` is set, else 0: each byte picks the source byte holding its bit, then tests it.
inline __m256i bit_bytes(uint32_t bits) {
  const __m256i spread = _mm256_setr_epi8(0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 1, 1, 1, 1,  //
                                          2, 2, 2, 2, 2, 2, 2, 2, 3, 3, 3, 3, 3, 3, 3, 3);
  const __m256i bit = _mm256_set1_epi64x(static_cast<long long>(0x8040201008040201ull));
  const __m256i v = _mm256_shuffle_epi8(_mm256_set1_epi32(static_cast<int>(bits)), spread);
  return _mm256_cmpeq_epi8(_mm256_and_si256(v, bit), bit);
}

// q with the bytes negated where mask is 0xFF (two's complement: (q ^ −1) − (−1) = −q).
inline __m256i negate_where(__m256i q, __m256i mask) { return _mm256_sub_epi8(_mm256_xor_si256(q, mask), mask); }

// Q4_1 / Q5_1: x = d·q + m, i.e. the affine form with offset −m (a − (−m) is a + m exactly).
template <bool kFive>
struct Q41Q51 {
  static constexpr int kChunks = 1, kBytes = kFive ? 24 : 20;
  static constexpr bool kAffine = true;
  using Hdr = Scale1;
  static Hdr header(const uint8_t* b) { return {f16_at(b), -f16_at(b + 2)}; }
  [[gnu::always_inline]] static Chunk chunk(const uint8_t* b, const Hdr& h, int) {
    __m256i q = split_nibbles(b + (kFive ? 8 : 4));
    if (kFive) q = _mm256_or_si256(q, _mm256_and_si256(bit_bytes(load_u32(b + 4)), _mm256_set1_epi8(16)));
    return uniform(q, h.s, h.m);
  }
};

// Q5_0: x = d·(q − 16), q = nibble | 16·bit_i(qh).
struct Q50 {
  static constexpr int kChunks = 1, kBytes = 22;
  static constexpr bool kAffine = false;
  using Hdr = Scale1;
  static Hdr header(const uint8_t* b) { return {f16_at(b), 0.0f}; }
  [[gnu::always_inline]] static Chunk chunk(const uint8_t* b, const Hdr& h, int) {
    const __m256i high = _mm256_and_si256(bit_bytes(load_u32(b + 2)), _mm256_set1_epi8(16));
    __m256i q = _mm256_or_si256(split_nibbles(b + 6), high);
    return uniform(_mm256_sub_epi8(q, _mm256_set1_epi8(16)), h.s);
  }
};

// Q2_K: chunk c covers half h = c/4, shift j = c%4: its 32 codes are bits 2j..2j+1 of qs[32h .. 32h+31], and its
// halves are sub-blocks 2c and 2c+1 (x = (d·sc)·q − dmin·m).
struct Q2K {
  static constexpr int kChunks = 8, kBytes = 84;
  static constexpr bool kAffine = true;
  struct Hdr {
    float s[16], m[16];
  };
  static Hdr header(const uint8_t* b) {
    Hdr h;
    const __m128i sc = _mm_loadu_si128(reinterpret_cast<const __m128i*>(b)), nib = _mm_set1_epi8(15);
    scale_bytes(h.s, _mm_and_si128(sc, nib), f16_at(b + 80));
    scale_bytes(h.m, _mm_and_si128(_mm_srli_epi16(sc, 4), nib), f16_at(b + 82));
    return h;
  }
  [[gnu::always_inline]] static Chunk chunk(const uint8_t* b, const Hdr& h, int c) {
    const __m256i qs = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(b + 16 + 32 * (c >> 2)));
    const __m256i q = _mm256_and_si256(_mm256_srl_epi16(qs, _mm_cvtsi32_si128(2 * (c & 3))), _mm256_set1_epi8(3));
    return {q, {h.s[2 * c], h.s[2 * c + 1]}, {h.m[2 * c], h.m[2 * c + 1]}};
  }
};

// Q3_K: Q2_K's index scheme for the low 2 bits; the high bit of element 16p + l of chunk c is bit (4h + j) of
// hmask[16p + l], and the code is (low | high << 2) − 4.
struct Q3K {
  static constexpr int kChunks = 8, kBytes = 110;
  static constexpr bool kAffine = false;
  using Hdr = Scales16;
  // Scale k: low 4 bits from byte k (k < 8) or the high nibble of byte k − 8, top 2 bits from bits 2(k/4).. of byte
  // 8 + k%4 (docs/design/formats.md#k-quants), minus 32.
  static Hdr header(const uint8_t* b) {
    Hdr h;
    const __m128i raw = _mm_loadl_epi64(reinterpret_cast<const __m128i*>(b + 96)), nib = _mm_set1_epi8(15);
    const __m128i lo = _mm_unpacklo_epi64(_mm_and_si128(raw, nib), _mm_and_si128(_mm_srli_epi16(raw, 4), nib));
    const __m128i hi =
        _mm_and_si128(_mm_srlv_epi32(_mm_set1_epi32(static_cast<int>(load_u32(b + 104))), _mm_setr_epi32(0, 2, 4, 6)),
                      _mm_set1_epi8(3));
    scale_bytes(h.s, _mm_sub_epi8(_mm_or_si128(lo, _mm_slli_epi16(hi, 4)), _mm_set1_epi8(32)), f16_at(b + 108));
    return h;
  }
  [[gnu::always_inline]] static Chunk chunk(const uint8_t* b, const Hdr& h, int c) {
    const __m256i three = _mm256_set1_epi8(3), one = _mm256_set1_epi8(1);
    const __m256i qs = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(b + 32 + 32 * (c >> 2)));
    const __m256i hm = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(b));
    const __m256i lo = _mm256_and_si256(_mm256_srl_epi16(qs, _mm_cvtsi32_si128(2 * (c & 3))), three);
    const __m256i hi = _mm256_and_si256(_mm256_srl_epi16(hm, _mm_cvtsi32_si128(c)), one);  // bit 4h + j = c
    const __m256i q = _mm256_sub_epi8(_mm256_or_si256(lo, _mm256_slli_epi16(hi, 2)), _mm256_set1_epi8(4));
    return halves(q, h, c);
  }
};

// The 16 IQ4 levels in both 128-bit lanes, for a byte shuffle by 4-bit code.
inline __m256i iq4_levels() {
  return _mm256_broadcastsi128_si256(_mm_loadu_si128(reinterpret_cast<const __m128i*>(quant_grids::kIq4nlValues)));
}

// IQ4_NL: x = d·level[nibble].
struct IQ4NL {
  static constexpr int kChunks = 1, kBytes = 18;
  static constexpr bool kAffine = false;
  using Hdr = Scale1;
  static Hdr header(const uint8_t* b) { return {f16_at(b), 0.0f}; }
  [[gnu::always_inline]] static Chunk chunk(const uint8_t* b, const Hdr& h, int) {
    return uniform(_mm256_shuffle_epi8(iq4_levels(), split_nibbles(b + 2)), h.s);
  }
};

// IQ4_XS: sub-block c decodes qs[16c ..] as IQ4_NL with dl = d·(ls − 32).
struct IQ4XS {
  static constexpr int kChunks = 8, kBytes = 136;
  static constexpr bool kAffine = false;
  using Hdr = Scales8;
  static Hdr header(const uint8_t* b) {
    Hdr h;
    const __m256i top = _mm256_and_si256(
        _mm256_srlv_epi32(_mm256_set1_epi32(load_u16(b + 2)), _mm256_setr_epi32(0, 2, 4, 6, 8, 10, 12, 14)),
        _mm256_set1_epi32(3));
    const __m256i ls = _mm256_or_si256(nibbles8(b + 4), _mm256_slli_epi32(top, 4));
    const __m256 centred = i32_to_ps(_mm256_sub_epi32(ls, _mm256_set1_epi32(32)));
    _mm256_storeu_ps(h.s, _mm256_mul_ps(_mm256_set1_ps(f16_at(b)), centred));
    return h;
  }
  [[gnu::always_inline]] static Chunk chunk(const uint8_t* b, const Hdr& h, int c) {
    return uniform(_mm256_shuffle_epi8(iq4_levels(), split_nibbles(b + 8 + 16 * c)), h.s[c]);
  }
};

}  // namespace
}  // namespace cai::hal::cpu::qc
