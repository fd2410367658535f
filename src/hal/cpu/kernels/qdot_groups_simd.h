// The integer kernels of interleaved 16-row groups (layouts in qdot_groups.h) for the including file's ISA: one 512-bit
// lane per row where the file is compiled with AVX-512 VNNI (vpdpwssd for Q8_0, vpdpbusd for Q4_0), two 256-bit halves
// of 8 rows otherwise (vpmaddwd, vpmaddubsw + vpmaddwd). Every row and block gets the exact int32 sum, then one
// multiply of the two scales and one fused multiply-add, so every ISA (and the scalar table) gives the same bits.
// Included after qdot_avx2.h by qdot_simd_table.h; internal linkage.
#pragma once

#include "core/block_bytes.h"
#include "hal/cpu/kernels/qdot_groups.h"

namespace cai::hal::cpu {
namespace {

inline int32_t load_i32(const void* p) {
  return static_cast<int32_t>(block_bytes::load_u32(static_cast<const uint8_t*>(p)));
}

constexpr int kGroupRows = kPackedGroupRows;
constexpr int kGroupScaleBytes = 2 * kGroupRows;

template <int NX>
void q8_0_r16_dot16_nx(const uint8_t* w, const ActBlockQ16* x, const float* xd, int64_t ldx, int64_t in, float* out) {
  constexpr int kBlock = kGroupRows * 34, kPairs = kActBlock / 2;
#if defined(__AVX512VNNI__) && defined(__AVX512BW__)
  __m512 acc[NX];
  for (auto& a : acc) a = _mm512_setzero_ps();
  for (int64_t b = 0; b < in / kActBlock; ++b) {
    const uint8_t* blk = w + b * kBlock;
    __m512i s[NX];
    for (auto& v : s) v = _mm512_setzero_si512();
    for (int p = 0; p < kPairs; ++p) {
      const __m512i wq = _mm512_cvtepi8_epi16(
          _mm256_loadu_si256(reinterpret_cast<const __m256i*>(blk + kGroupScaleBytes + p * 2 * kGroupRows)));
      for (int j = 0; j < NX; ++j)
        s[j] = _mm512_dpwssd_epi32(s[j], wq, _mm512_set1_epi32(load_i32(x[j * ldx + b].q + 2 * p)));
    }
    const __m512 dw = _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(blk)));
    for (int j = 0; j < NX; ++j)
      acc[j] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(s[j]), _mm512_mul_ps(dw, _mm512_set1_ps(xd[j * ldx + b])), acc[j]);
  }
  for (int j = 0; j < NX; ++j) _mm512_storeu_ps(out + j * kGroupRows, acc[j]);
#else
  for (int h = 0; h < 2; ++h) {  // rows 8h .. 8h + 7
    __m256 acc[NX];
    for (auto& a : acc) a = _mm256_setzero_ps();
    for (int64_t b = 0; b < in / kActBlock; ++b) {
      const uint8_t* blk = w + b * kBlock;
      __m256i s[NX];
      for (auto& v : s) v = _mm256_setzero_si256();
      for (int p = 0; p < kPairs; ++p) {
        const __m256i wq = _mm256_cvtepi8_epi16(
            _mm_loadu_si128(reinterpret_cast<const __m128i*>(blk + kGroupScaleBytes + p * 2 * kGroupRows + 16 * h)));
        for (int j = 0; j < NX; ++j)
          s[j] = _mm256_add_epi32(s[j], _mm256_madd_epi16(wq, _mm256_set1_epi32(load_i32(x[j * ldx + b].q + 2 * p))));
      }
      const __m256 dw = _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(blk + 16 * h)));
      for (int j = 0; j < NX; ++j)
        acc[j] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(s[j]), _mm256_mul_ps(dw, _mm256_set1_ps(xd[j * ldx + b])), acc[j]);
    }
    for (int j = 0; j < NX; ++j) _mm256_storeu_ps(out + j * kGroupRows + 8 * h, acc[j]);
  }
#endif
}

// Q4_0 codes are unsigned nibbles (value = code − 8): u8 × s8 products, then 8
// · Σ activation codes subtracted.
template <int NX>
void q4_0_r16_dot_nx(const uint8_t* w, const ActBlockQ8* x, int64_t ldx, int64_t in, float* out) {
  constexpr int kBlock = kGroupRows * 18, kQuads = 4;
#if defined(__AVX512VNNI__) && defined(__AVX512BW__)
  const __m512i m = _mm512_set1_epi8(0x0F);
  __m512 acc[NX];
  for (auto& a : acc) a = _mm512_setzero_ps();
  for (int64_t b = 0; b < in / kActBlock; ++b) {
    const uint8_t* blk = w + b * kBlock;
    __m512i s[NX];
    for (auto& v : s) v = _mm512_setzero_si512();
    for (int v = 0; v < kQuads; ++v) {
      const __m512i raw = _mm512_loadu_si512(blk + kGroupScaleBytes + v * 4 * kGroupRows);
      const __m512i lo = _mm512_and_si512(raw, m), hi = _mm512_and_si512(_mm512_srli_epi16(raw, 4), m);
      for (int j = 0; j < NX; ++j) {
        const ActBlockQ8& a = x[j * ldx + b];
        s[j] = _mm512_dpbusd_epi32(s[j], lo, _mm512_set1_epi32(load_i32(a.q + 4 * v)));
        s[j] = _mm512_dpbusd_epi32(s[j], hi, _mm512_set1_epi32(load_i32(a.q + 16 + 4 * v)));
      }
    }
    const __m512 dw = _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(blk)));
    for (int j = 0; j < NX; ++j) {
      const ActBlockQ8& a = x[j * ldx + b];
      const __m512i sum = _mm512_sub_epi32(s[j], _mm512_set1_epi32(8 * (a.sum[0] + a.sum[1])));
      acc[j] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(sum), _mm512_mul_ps(dw, _mm512_set1_ps(a.d)), acc[j]);
    }
  }
  for (int j = 0; j < NX; ++j) _mm512_storeu_ps(out + j * kGroupRows, acc[j]);
#else
  const __m256i m = _mm256_set1_epi8(0x0F);
  for (int h = 0; h < 2; ++h) {  // rows 8h .. 8h + 7
    __m256 acc[NX];
    for (auto& a : acc) a = _mm256_setzero_ps();
    for (int64_t b = 0; b < in / kActBlock; ++b) {
      const uint8_t* blk = w + b * kBlock;
      __m256i s[NX];
      for (auto& v : s) v = _mm256_setzero_si256();
      for (int v = 0; v < kQuads; ++v) {
        const __m256i raw =
            _mm256_loadu_si256(reinterpret_cast<const __m256i*>(blk + kGroupScaleBytes + v * 4 * kGroupRows + 32 * h));
        const __m256i lo = _mm256_and_si256(raw, m), hi = _mm256_and_si256(_mm256_srli_epi16(raw, 4), m);
        for (int j = 0; j < NX; ++j) {
          const ActBlockQ8& a = x[j * ldx + b];
          s[j] = _mm256_add_epi32(s[j], _mm256_add_epi32(dot_u8s8(lo, _mm256_set1_epi32(load_i32(a.q + 4 * v))),
                                                         dot_u8s8(hi, _mm256_set1_epi32(load_i32(a.q + 16 + 4 * v)))));
        }
      }
      const __m256 dw = _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(blk + 16 * h)));
      for (int j = 0; j < NX; ++j) {
        const ActBlockQ8& a = x[j * ldx + b];
        const __m256i sum = _mm256_sub_epi32(s[j], _mm256_set1_epi32(8 * (a.sum[0] + a.sum[1])));
        acc[j] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(sum), _mm256_mul_ps(dw, _mm256_set1_ps(a.d)), acc[j]);
      }
    }
    for (int j = 0; j < NX; ++j) _mm256_storeu_ps(out + j * kGroupRows + 8 * h, acc[j]);
  }
#endif
}

template <int NX>
struct Q8_0R16Dot16 {
  static void run(const uint8_t* w, const ActBlockQ16* x, const float* xd, int64_t ldx, int64_t in, float* out) {
    q8_0_r16_dot16_nx<NX>(w, x, xd, ldx, in, out);
  }
};

template <int NX>
struct Q4_0R16Dot {
  static void run(const uint8_t* w, const ActBlockQ8* x, int64_t ldx, int64_t in, float* out) {
    q4_0_r16_dot_nx<NX>(w, x, ldx, in, out);
  }
};

inline void register_qdot_groups_simd(QDotKernels& k) {
  k.dot16[static_cast<int>(DType::kQ8_0_R16)] = dot16_any_nx<Q8_0R16Dot16>;
  k.dot[static_cast<int>(DType::kQ4_0_R16)] = dot_any_nx<Q4_0R16Dot>;
}

}  // namespace
}  // namespace cai::hal::cpu
