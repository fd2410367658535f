// AVX-512 GEMM decoders, one per weight dtype: a row is walked block by block and each 32-element chunk comes out as
// two 16-float vectors. Included only by gemm_avx512.cpp (compiled with the AVX-512 flags); internal linkage.
#pragma once

#include <immintrin.h>

#include <cstring>

#include "core/dtype.h"
#include "core/quant_k.h"
#include "hal/cpu/kernels/gemm_codes_iq_avx2.h"

namespace cai::hal::cpu {
namespace {

__m512 u8_to_ps(__m128i bytes) { return _mm512_cvtepi32_ps(_mm512_cvtepu8_epi32(bytes)); }

// u8 codes minus `bias`, as floats (exact: small integers).
__m512 u8_minus_ps(__m128i bytes, int bias) {
  return _mm512_cvtepi32_ps(_mm512_sub_epi32(_mm512_cvtepu8_epi32(bytes), _mm512_set1_epi32(bias)));
}

// A decoder walks a row block by block (kBytes each, kChunks chunks of 32 elements): header() reads what a block's
// chunks share, chunk() yields chunk c as two 16-float vectors. Plain types use 32-element "blocks" plus one() for
// a ragged tail.
struct NoHdr {};

struct F32D {
  static constexpr int kChunks = 1, kBytes = 128;
  static NoHdr header(const uint8_t*) { return {}; }
  static void chunk(const uint8_t* b, NoHdr, int, __m512* v) {
    v[0] = _mm512_loadu_ps(reinterpret_cast<const float*>(b));
    v[1] = _mm512_loadu_ps(reinterpret_cast<const float*>(b) + 16);
  }
  static float one(const uint8_t* w, int64_t k) {
    float f;
    std::memcpy(&f, w + 4 * k, 4);
    return f;
  }
};

struct F16D {
  static constexpr int kChunks = 1, kBytes = 64;
  static NoHdr header(const uint8_t*) { return {}; }
  static void chunk(const uint8_t* b, NoHdr, int, __m512* v) {
    v[0] = _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(b)));
    v[1] = _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(b + 32)));
  }
  static float one(const uint8_t* w, int64_t k) { return f16_at(w + 2 * k); }
};

struct BF16D {
  static constexpr int kChunks = 1, kBytes = 64;
  static NoHdr header(const uint8_t*) { return {}; }
  static __m512 widen(const uint8_t* p) {
    __m512i u = _mm512_cvtepu16_epi32(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(p)));
    return _mm512_castsi512_ps(_mm512_slli_epi32(u, 16));
  }
  static void chunk(const uint8_t* b, NoHdr, int, __m512* v) {
    v[0] = widen(b);
    v[1] = widen(b + 32);
  }
  static float one(const uint8_t* w, int64_t k) {
    uint32_t u = static_cast<uint32_t>(w[2 * k] | (w[2 * k + 1] << 8)) << 16;
    float f;
    std::memcpy(&f, &u, 4);
    return f;
  }
};

// e4m3 → f32 through f16: code bits << 7 form the f16 of value·2^-8 exactly (subnormals included), so no f32
// subnormal (slow microcode assists) ever appears; 0x7F / 0xFF become NaN.
struct F8D {
  static constexpr int kChunks = 1, kBytes = 32;
  static NoHdr header(const uint8_t*) { return {}; }
  static __m512 widen(const uint8_t* p) {
    __m256i c = _mm256_cvtepu8_epi16(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p)));
    __m256i mag = _mm256_and_si256(c, _mm256_set1_epi16(0x7F));
    __m256i h = _mm256_or_si256(_mm256_slli_epi16(mag, 7), _mm256_slli_epi16(_mm256_srli_epi16(c, 7), 15));
    __m512 f = _mm512_mul_ps(_mm512_cvtph_ps(h), _mm512_set1_ps(256.0f));
    __mmask16 nan = _mm256_cmpeq_epi16_mask(mag, _mm256_set1_epi16(0x7F));
    return _mm512_mask_mov_ps(f, nan, _mm512_set1_ps(__builtin_nanf("")));
  }
  static void chunk(const uint8_t* b, NoHdr, int, __m512* v) {
    v[0] = widen(b);
    v[1] = widen(b + 16);
  }
  static float one(const uint8_t* w, int64_t k) { return fp8_e4m3_to_f32(w[k]); }
};

struct Q8_0D {
  static constexpr int kChunks = 1, kBytes = 34;
  static NoHdr header(const uint8_t*) { return {}; }
  static void chunk(const uint8_t* b, NoHdr, int, __m512* v) {
    __m512 d = _mm512_set1_ps(f16_at(b));
    __m128i q0 = _mm_loadu_si128(reinterpret_cast<const __m128i*>(b + 2));
    __m128i q1 = _mm_loadu_si128(reinterpret_cast<const __m128i*>(b + 18));
    v[0] = _mm512_mul_ps(d, _mm512_cvtepi32_ps(_mm512_cvtepi8_epi32(q0)));
    v[1] = _mm512_mul_ps(d, _mm512_cvtepi32_ps(_mm512_cvtepi8_epi32(q1)));
  }
};

struct Q4_0D {
  static constexpr int kChunks = 1, kBytes = 18;
  static NoHdr header(const uint8_t*) { return {}; }
  static void chunk(const uint8_t* b, NoHdr, int, __m512* v) {
    __m512 d = _mm512_set1_ps(f16_at(b));
    __m128i q = _mm_loadu_si128(reinterpret_cast<const __m128i*>(b + 2));
    __m128i lo = _mm_and_si128(q, _mm_set1_epi8(15));
    __m128i hi = _mm_and_si128(_mm_srli_epi16(q, 4), _mm_set1_epi8(15));
    v[0] = _mm512_mul_ps(d, u8_minus_ps(lo, 8));
    v[1] = _mm512_mul_ps(d, u8_minus_ps(hi, 8));
  }
};

// Q4_K / Q5_K: chunk s is sub-block s, 32 codes (plus the 5th bit from qh for Q5_K).
template <bool kFive>
struct QxKD {
  static constexpr int kChunks = 8, kBytes = kFive ? 176 : 144;
  static qc::KHdr header(const uint8_t* b) { return qc::k_header(b); }
  static void chunk(const uint8_t* b, const qc::KHdr& hd, int s, __m512* v) {
    __m512 dsc = _mm512_set1_ps(hd.dsc[s]), dm = _mm512_set1_ps(hd.dm[s]);
    const uint8_t* qs = b + (kFive ? 48 : 16) + 32 * (s >> 1);
    __m256i q = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(qs));
    q = _mm256_and_si256(_mm256_srl_epi16(q, _mm_cvtsi32_si128(4 * (s & 1))), _mm256_set1_epi8(15));
    if (kFive) {
      __m256i h = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(b + 16));
      h = _mm256_and_si256(_mm256_srl_epi16(h, _mm_cvtsi32_si128(s)), _mm256_set1_epi8(1));
      q = _mm256_or_si256(q, _mm256_slli_epi16(h, 4));
    }
    v[0] = _mm512_sub_ps(_mm512_mul_ps(dsc, u8_to_ps(_mm256_castsi256_si128(q))), dm);
    v[1] = _mm512_sub_ps(_mm512_mul_ps(dsc, u8_to_ps(_mm256_extracti128_si256(q, 1))), dm);
  }
};

// Q6_K: chunk c is half h = c/4, group gi = c%4 (see docs/design/formats.md#k-quants); 16 signed scales, one per 16
// elements.
struct Q6Hdr {
  float dsc[16];
};

struct Q6KD {
  static constexpr int kChunks = 8, kBytes = 210;
  static Q6Hdr header(const uint8_t* b) {
    Q6Hdr h;
    float d = f16_at(b + 208);
    for (int j = 0; j < 16; ++j) h.dsc[j] = d * static_cast<float>(static_cast<int8_t>(b[192 + j]));
    return h;
  }
  static void chunk(const uint8_t* b, const Q6Hdr& hd, int c, __m512* v) {
    int h = c >> 2, gi = c & 3;
    __m256i lo = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(b + 64 * h + 32 * (gi & 1)));
    lo = _mm256_and_si256(_mm256_srl_epi16(lo, _mm_cvtsi32_si128(gi < 2 ? 0 : 4)), _mm256_set1_epi8(15));
    __m256i hi = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(b + 128 + 32 * h));
    hi = _mm256_and_si256(_mm256_srl_epi16(hi, _mm_cvtsi32_si128(2 * gi)), _mm256_set1_epi8(3));
    __m256i q = _mm256_or_si256(lo, _mm256_slli_epi16(hi, 4));
    v[0] = _mm512_mul_ps(_mm512_set1_ps(hd.dsc[2 * c]), u8_minus_ps(_mm256_castsi256_si128(q), 32));
    v[1] = _mm512_mul_ps(_mm512_set1_ps(hd.dsc[2 * c + 1]), u8_minus_ps(_mm256_extracti128_si256(q, 1), 32));
  }
};

// The types decoded to int8 codes by gemm_codes*_avx2.h: element i = s[i/16]·code (− m[i/16]).
template <class C>
struct CodesD {
  static constexpr int kChunks = C::kChunks, kBytes = C::kBytes;
  static typename C::Hdr header(const uint8_t* b) { return C::header(b); }
  [[gnu::always_inline]] static void chunk(const uint8_t* b, const typename C::Hdr& hd, int c, __m512* v) {
    const qc::Chunk k = C::chunk(b, hd, c);
    const __m128i halves[2] = {_mm256_castsi256_si128(k.q), _mm256_extracti128_si256(k.q, 1)};
    for (int i = 0; i < 2; ++i) {
      const __m512 f = _mm512_cvtepi32_ps(_mm512_cvtepi8_epi32(halves[i]));
      const __m512 s = _mm512_set1_ps(k.s[i]);
      v[i] = C::kAffine ? _mm512_sub_ps(_mm512_mul_ps(s, f), _mm512_set1_ps(k.m[i])) : _mm512_mul_ps(s, f);
    }
  }
};

}  // namespace
}  // namespace cai::hal::cpu
