// Integer dot-product building blocks shared by the AVX2 and the AVX-512 VNNI tables (qdot_avx2.cpp,
// qdot_avx512vnni.cpp): the int8 product primitive (vpdpbusd where the including file is compiled with VNNI,
// vpmaddubsw + vpmaddwd otherwise; 512-bit vpdpwssd / vpmaddwd for int16), the legacy-block kernels (Q8_0 with int16
// activations, Q4_0 with int8) and the NX dispatch. Include only from a file compiled for AVX2 or above; everything
// here has internal linkage.
#pragma once

#include <immintrin.h>

#include "hal/cpu/kernels/simd_scalars.h"
#include "hal/cpu/kernels/gemm_kernels.h"
#include "hal/cpu/kernels/qdot_kernels.h"
#include "hal/cpu/kernels/qdot_nx.h"

namespace cai::hal::cpu {
namespace {

// Per int32 lane: Σ of 4 adjacent u8 × s8 products. Exact (no saturation) for |s| ≤ 127 and u ≤ 128.
inline __m256i dot_u8s8(__m256i u, __m256i s) {
#if defined(__AVX512VNNI__) && defined(__AVX512VL__)
  return _mm256_dpbusd_epi32(_mm256_setzero_si256(), u, s);
#else
  return _mm256_madd_epi16(_mm256_maddubs_epi16(u, s), _mm256_set1_epi16(1));
#endif
}

// Per int32 lane: Σ of 4 adjacent s8 × s8 products (w any int8, a in [-127, 127]): |w| times a with w's sign.
inline __m256i dot_s8s8(__m256i w, __m256i a) { return dot_u8s8(_mm256_sign_epi8(w, w), _mm256_sign_epi8(a, w)); }

inline __m256i load_act(const ActBlockQ8& a) { return _mm256_loadu_si256(reinterpret_cast<const __m256i*>(a.q)); }

// The 32 signed codes of a Q4_0 block: nibble − 8; element i in the low nibble of byte i, i + 16 in the high.
inline __m256i q4_0_codes(const uint8_t* blk) {
  const __m128i b = _mm_loadu_si128(reinterpret_cast<const __m128i*>(blk + 2));
  const __m128i m = _mm_set1_epi8(0x0F);
  const __m256i u = _mm256_set_m128i(_mm_and_si128(_mm_srli_epi16(b, 4), m), _mm_and_si128(b, m));
  return _mm256_sub_epi8(u, _mm256_set1_epi8(8));
}

// Q4_0, one 8-lane float chain per activation row: acc += (weight scale · act scale) · integer products per block.
template <int NX>
void q4_0_dot_nx(const uint8_t* w, const ActBlockQ8* x, int64_t ldx, int64_t in, float* out) {
  constexpr int kBytes = 18;
  __m256 acc[NX];
  for (auto& a : acc) a = _mm256_setzero_ps();
  for (int64_t b = 0; b < in / kActBlock; ++b) {
    const uint8_t* blk = w + b * kBytes;
    const float dw = f16_at(blk);
    const __m256i wq = q4_0_codes(blk);
    for (int j = 0; j < NX; ++j) {
      const ActBlockQ8& a = x[j * ldx + b];
      const __m256 p = _mm256_cvtepi32_ps(dot_s8s8(wq, load_act(a)));
      acc[j] = _mm256_fmadd_ps(_mm256_set1_ps(dw * a.d), p, acc[j]);
    }
  }
  for (int j = 0; j < NX; ++j) out[j] = hsum8(acc[j]);
}

// Q8_0 against 16-bit activations: codes widened to int16 once per block, each int32 lane's 2 (VNNI, 512-bit) or 4
// (AVX2) products exact in float (|Σ| ≤ 4 · 128 · 32767 < 2²⁴) before the scale.
template <int NX>
void q8_0_dot16_nx(const uint8_t* w, const ActBlockQ16* x, const float* xd, int64_t ldx, int64_t in, float* out) {
  constexpr int kBytes = 34;
#if defined(__AVX512VNNI__) && defined(__AVX512BW__)
  __m512 acc[NX];
  for (auto& a : acc) a = _mm512_setzero_ps();
  for (int64_t b = 0; b < in / kActBlock; ++b) {
    const uint8_t* blk = w + b * kBytes;
    const float dw = f16_at(blk);
    const __m512i wq = _mm512_cvtepi8_epi16(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(blk + 2)));
    for (int j = 0; j < NX; ++j) {
      const __m512i s = _mm512_dpwssd_epi32(_mm512_setzero_si512(), wq, _mm512_load_si512(x[j * ldx + b].q));
      acc[j] = _mm512_fmadd_ps(_mm512_set1_ps(dw * xd[j * ldx + b]), _mm512_cvtepi32_ps(s), acc[j]);
    }
  }
  for (int j = 0; j < NX; ++j) out[j] = _mm512_reduce_add_ps(acc[j]);
#else
  __m256 acc[NX];
  for (auto& a : acc) a = _mm256_setzero_ps();
  for (int64_t b = 0; b < in / kActBlock; ++b) {
    const uint8_t* blk = w + b * kBytes;
    const float dw = f16_at(blk);
    const __m256i w0 = _mm256_cvtepi8_epi16(_mm_loadu_si128(reinterpret_cast<const __m128i*>(blk + 2)));
    const __m256i w1 = _mm256_cvtepi8_epi16(_mm_loadu_si128(reinterpret_cast<const __m128i*>(blk + 18)));
    for (int j = 0; j < NX; ++j) {
      const __m256i* q = reinterpret_cast<const __m256i*>(x[j * ldx + b].q);
      const __m256i s = _mm256_add_epi32(_mm256_madd_epi16(w0, _mm256_load_si256(q)),
                                         _mm256_madd_epi16(w1, _mm256_load_si256(q + 1)));
      acc[j] = _mm256_fmadd_ps(_mm256_set1_ps(dw * xd[j * ldx + b]), _mm256_cvtepi32_ps(s), acc[j]);
    }
  }
  for (int j = 0; j < NX; ++j) out[j] = hsum8(acc[j]);
#endif
}

template <int NX>
struct Q4_0Dot {
  static void run(const uint8_t* w, const ActBlockQ8* x, int64_t ldx, int64_t in, float* out) {
    q4_0_dot_nx<NX>(w, x, ldx, in, out);
  }
};

template <int NX>
struct Q8_0Dot16 {
  static void run(const uint8_t* w, const ActBlockQ16* x, const float* xd, int64_t ldx, int64_t in, float* out) {
    q8_0_dot16_nx<NX>(w, x, xd, ldx, in, out);
  }
};

inline void register_qdot_legacy_simd(QDotKernels& k) {
  k.dot16[static_cast<int>(DType::kQ8_0)] = dot16_any_nx<Q8_0Dot16>;
  k.dot[static_cast<int>(DType::kQ4_0)] = dot_any_nx<Q4_0Dot>;
}

}  // namespace
}  // namespace cai::hal::cpu
