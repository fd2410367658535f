// MlaBf16Kernels on AVX-512 BF16 (mla_bf16.h), its tiles in the loops of mla_bf16_tiles.h. Dots: tiles of 4 queries ×
// 4 rows, one 16-lane chain a dot summed in one tree with its tile's neighbours, rows rounded to BF16 once for all
// queries. Accumulations: positions in pairs, each pair's two rows interleaved element by element so that one
// `vdpbf16ps` adds both positions' products to 16 columns; 4 outputs × 64 columns a pass.
#include "hal/cpu/kernels/mla_bf16.h"

#include "hal/cpu/kernels/cpu_features.h"

#if defined(__AVX512BF16__) && defined(__AVX512BW__)

#include <immintrin.h>

#include "hal/cpu/kernels/mla_bf16_tiles.h"

namespace cai::hal::cpu {

namespace {

// 32 floats (x, then x + 16) as 32 BF16 values, nearest even.
__m512i bf16x32(const float* x) {
  return reinterpret_cast<__m512i>(_mm512_cvtne2ps_pbh(_mm512_loadu_ps(x + 16), _mm512_loadu_ps(x)));
}

float hsum16(__m512 v) {
  const __m256 a = _mm256_add_ps(_mm512_extractf32x8_ps(v, 0), _mm512_extractf32x8_ps(v, 1));
  __m128 b = _mm_add_ps(_mm256_castps256_ps128(a), _mm256_extractf128_ps(a, 1));
  b = _mm_add_ps(b, _mm_movehl_ps(b, b));
  return _mm_cvtss_f32(_mm_add_ss(b, _mm_movehdup_ps(b)));
}

// [Σ v[0], ..., Σ v[7]]: the 8 vectors' lanes summed, a tree shared by all 8 (half the instructions of 8 one-vector
// sums).
__m256 hsum8x(const __m512* v) {
  __m256 h[8];
  for (int k = 0; k < 8; ++k) h[k] = _mm256_add_ps(_mm512_extractf32x8_ps(v[k], 0), _mm512_extractf32x8_ps(v[k], 1));
  const __m256 a = _mm256_hadd_ps(_mm256_hadd_ps(h[0], h[1]), _mm256_hadd_ps(h[2], h[3]));
  const __m256 b = _mm256_hadd_ps(_mm256_hadd_ps(h[4], h[5]), _mm256_hadd_ps(h[6], h[7]));
  return _mm256_add_ps(_mm256_permute2f128_ps(a, b, 0x20), _mm256_permute2f128_ps(a, b, 0x31));
}

// The tiles of MlaBf16Tiles (mla_bf16_tiles.h).
struct Avx512Bf16Tile {
  static void to_bf16(const float* x, int64_t n, uint16_t* out) {
    for (int64_t i = 0; i < n; i += 32) _mm512_storeu_si512(out + i, bf16x32(x + i));
  }

  template <int QN, int RN>
  static void dot_tile(const uint16_t* q, int64_t ldq, const uint16_t* r, int64_t n, float* out, int64_t ldo) {
    __m512 acc[QN][RN];
    for (int i = 0; i < QN; ++i)
      for (int t = 0; t < RN; ++t) acc[i][t] = _mm512_setzero_ps();
    for (int64_t d = 0; d < n; d += 32) {
      __m512bh rv[RN];
      for (int t = 0; t < RN; ++t) rv[t] = reinterpret_cast<__m512bh>(_mm512_loadu_si512(r + t * n + d));
      for (int i = 0; i < QN; ++i) {
        const __m512bh qv = reinterpret_cast<__m512bh>(_mm512_loadu_si512(q + i * ldq + d));
        for (int t = 0; t < RN; ++t) acc[i][t] = _mm512_dpbf16_ps(acc[i][t], qv, rv[t]);
      }
    }
    if constexpr (RN == 4 && QN % 2 == 0) {
      for (int i = 0; i < QN; i += 2) {
        const __m512 pair[8] = {acc[i][0],     acc[i][1],     acc[i][2],     acc[i][3],
                                acc[i + 1][0], acc[i + 1][1], acc[i + 1][2], acc[i + 1][3]};
        const __m256 sums = hsum8x(pair);
        _mm_storeu_ps(out + i * ldo, _mm256_castps256_ps128(sums));
        _mm_storeu_ps(out + (i + 1) * ldo, _mm256_extractf128_ps(sums, 1));
      }
    } else {
      for (int i = 0; i < QN; ++i)
        for (int t = 0; t < RN; ++t) out[i * ldo + t] = hsum16(acc[i][t]);
    }
  }

  // 16 columns of positions 2k and 2k + 1 become 32 BF16 values x0 y0 x1 y1 ...
  static void interleave_pairs(const float* rows, int64_t ldr, int nt, int64_t n, uint16_t* buf) {
    const __m512i order = _mm512_set_epi16(31, 15, 30, 14, 29, 13, 28, 12, 27, 11, 26, 10, 25, 9, 24, 8, 23, 7, 22, 6,
                                           21, 5, 20, 4, 19, 3, 18, 2, 17, 1, 16, 0);
    for (int k = 0; k < (nt + 1) / 2; ++k) {
      const float* r0 = rows + 2 * k * ldr;
      const bool odd_end = 2 * k + 1 == nt;
      for (int64_t c = 0; c < n; c += 16) {
        const __m512 x0 = _mm512_loadu_ps(r0 + c);
        const __m512 x1 = odd_end ? _mm512_setzero_ps() : _mm512_loadu_ps(r0 + ldr + c);
        const __m512i both = reinterpret_cast<__m512i>(_mm512_cvtne2ps_pbh(x1, x0));
        _mm512_storeu_si512(buf + (k * n + c) * 2, _mm512_permutexvar_epi16(order, both));
      }
    }
  }

  static uint32_t pair_word(float x, float y) {
    alignas(16) float pair[2] = {x, y};
    const __m128i b =
        reinterpret_cast<__m128i>(_mm_cvtneps_pbh(_mm_loadl_pi(_mm_setzero_ps(), reinterpret_cast<__m64*>(pair))));
    return static_cast<uint32_t>(_mm_cvtsi128_si32(b));
  }

  // M outputs' 16·C columns from c0 on, 4 outputs × 64 columns a pass.
  template <int M, int C>
  static void axpy_cols(const uint32_t* w, int np, const uint16_t* pairs, int64_t n, int64_t c0, float* y,
                        int64_t ldy) {
    __m512 acc[M][C];
    for (int i = 0; i < M; ++i)
      for (int c = 0; c < C; ++c) acc[i][c] = _mm512_loadu_ps(y + i * ldy + c0 + 16 * c);
    for (int k = 0; k < np; ++k) {
      __m512bh v[C];
      for (int c = 0; c < C; ++c)
        v[c] = reinterpret_cast<__m512bh>(_mm512_loadu_si512(pairs + (k * n + c0 + 16 * c) * 2));
      for (int i = 0; i < M; ++i) {
        const __m512bh a = reinterpret_cast<__m512bh>(_mm512_set1_epi32(static_cast<int>(w[i * np + k])));
        for (int c = 0; c < C; ++c) acc[i][c] = _mm512_dpbf16_ps(acc[i][c], a, v[c]);
      }
    }
    for (int i = 0; i < M; ++i)
      for (int c = 0; c < C; ++c) _mm512_storeu_ps(y + i * ldy + c0 + 16 * c, acc[i][c]);
  }

  template <int M>
  static void axpy_outputs(const uint32_t* w, int np, const uint16_t* pairs, int64_t n, float* y, int64_t ldy) {
    int64_t c0 = 0;
    for (; c0 + 64 <= n; c0 += 64) axpy_cols<M, 4>(w, np, pairs, n, c0, y, ldy);
    for (; c0 < n; c0 += 16) axpy_cols<M, 1>(w, np, pairs, n, c0, y, ldy);
  }
};

}  // namespace

const MlaBf16Kernels* mla_bf16_kernels() {
  static const bool has_bf16 = __builtin_cpu_supports("avx512bf16");
  return has_bf16 && active_cpu_isa() == CpuIsa::kAvx512 ? &MlaBf16Tiles<Avx512Bf16Tile>::table() : nullptr;
}

}  // namespace cai::hal::cpu

#elif !defined(__aarch64__)  // ARM64: mla_bf16_bfdot.cpp

namespace cai::hal::cpu {

const MlaBf16Kernels* mla_bf16_kernels() { return nullptr; }

}  // namespace cai::hal::cpu

#endif
