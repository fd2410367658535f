// Activation quantization (core/quant_act.h) for the including file's ISA: the same blocks, bit for bit, as the
// scalar quantize_act_row(_q16) — the absmax is order-free, x · (kMax / amax) is one rounded multiply, and the
// conversion rounds to nearest, ties to even, as nearbyint does in the default rounding mode. 256-bit AVX2 for both
// SIMD tables (a block is four vectors). Included by qdot_simd_table.h; internal linkage.
#pragma once

#include <immintrin.h>

#include "core/quant_act.h"

namespace cai::hal::cpu {
namespace {

inline int hsum_i32(__m256i v) {
  const __m128i s4 = _mm_add_epi32(_mm256_castsi256_si128(v), _mm256_extracti128_si256(v, 1));
  const __m128i s2 = _mm_add_epi32(s4, _mm_shuffle_epi32(s4, 0x4E));
  return _mm_cvtsi128_si32(_mm_add_epi32(s2, _mm_shuffle_epi32(s2, 0xB1)));
}

// One block's 32 values: their absmax and kMax / absmax (0 for an all-zero block).
template <int kMax>
struct BlockScale {
  float amax, inv;
  explicit BlockScale(const float* v) {
    const __m256 sign = _mm256_set1_ps(-0.0f);
    __m256 m = _mm256_setzero_ps();
    for (int i = 0; i < kActBlock; i += 8) m = _mm256_max_ps(_mm256_andnot_ps(sign, _mm256_loadu_ps(v + i)), m);
    const __m128 m4 = _mm_max_ps(_mm256_castps256_ps128(m), _mm256_extractf128_ps(m, 1));
    const __m128 m2 = _mm_max_ps(m4, _mm_movehl_ps(m4, m4));
    amax = _mm_cvtss_f32(_mm_max_ss(m2, _mm_movehdup_ps(m2)));
    inv = amax > 0.0f ? static_cast<float>(kMax) / amax : 0.0f;
  }
};

// The 32 codes of a block as int32 lanes: round-half-even(v · inv), in four groups of 8.
inline void block_codes(const float* v, float inv, __m256i (&c)[4]) {
  const __m256 s = _mm256_set1_ps(inv);
  for (int k = 0; k < 4; ++k) c[k] = _mm256_cvtps_epi32(_mm256_mul_ps(_mm256_loadu_ps(v + 8 * k), s));
}

void quantize_act_row_simd(const float* x, int64_t n, ActBlockQ8* out) {
  for (int64_t b = 0; b < n / kActBlock; ++b) {
    const float* v = x + b * kActBlock;
    const BlockScale<127> scale(v);
    __m256i c[4];
    block_codes(v, scale.inv, c);
    // Packing interleaves 128-bit lanes: [c0 lo, c1 lo, c2 lo, c3 lo | c0 hi, ...] as 4-byte pieces; the permute puts
    // them back in element order.
    const __m256i bytes = _mm256_packs_epi16(_mm256_packs_epi32(c[0], c[1]), _mm256_packs_epi32(c[2], c[3]));
    const __m256i ordered = _mm256_permutevar8x32_epi32(bytes, _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7));
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(out[b].q), ordered);
    out[b].d = scale.amax / 127.0f;
    set_act_block_sums(out[b], hsum_i32(_mm256_add_epi32(c[0], c[1])), hsum_i32(_mm256_add_epi32(c[2], c[3])));
  }
}

void quantize_act_row_q16_simd(const float* x, int64_t n, ActBlockQ16* out, float* d) {
  for (int64_t b = 0; b < n / kActBlock; ++b) {
    const float* v = x + b * kActBlock;
    const BlockScale<32767> scale(v);
    __m256i c[4];
    block_codes(v, scale.inv, c);
    for (int k = 0; k < 2; ++k) {  // int16 packing interleaves 128-bit lanes too: 64-bit pieces back in order
      const __m256i pair = _mm256_packs_epi32(c[2 * k], c[2 * k + 1]);
      _mm256_storeu_si256(reinterpret_cast<__m256i*>(out[b].q + 16 * k), _mm256_permute4x64_epi64(pair, 0xD8));
    }
    d[b] = scale.amax / 32767.0f;
  }
}

}  // namespace
}  // namespace cai::hal::cpu
