// AVX-512 GEMM kernels: fused dequant·dot and row dequant over the per-dtype decoders (gemm_decoders_avx512.h), the
// batch-invariant tile, the 6×32 micro-kernel and the attention block kernels (vec_simd_avx512.h).
// Compiled with -mavx512f/bw/vl/dq; everything here has internal linkage so no AVX-512 code leaks into other TUs.
#include "hal/cpu/kernels/gemm_kernels.h"

#if defined(__AVX512F__) && defined(__AVX512BW__) && defined(__FMA__) && defined(__F16C__)

// GCC 12's intrinsic headers trip -W(maybe-)uninitialized on their own _mm*_undefined_* helpers (GCC bug 105593).
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#include <immintrin.h>

#include "hal/cpu/kernels/gemm_decoders_avx512.h"
#include "hal/cpu/kernels/vec_simd_avx512.h"
#include "hal/cpu/kernels/gemm_decoder_list.h"

namespace cai::hal::cpu {

namespace {

constexpr int kNr = 32;
constexpr int kMr = 6;

// Sum of 16 lanes in one fixed tree — lanes (i, i+8), then (i, i+4), (i, i+2), (i, i+1) — written out rather than
// left to _mm512_reduce_add_ps, whose order is the compiler's: finish() below reproduces it for 16 outputs at once.
float hsum(__m512 v) {
  const __m256 t8 = _mm256_add_ps(_mm512_extractf32x8_ps(v, 1), _mm512_castps512_ps256(v));
  const __m128 t4 = _mm_add_ps(_mm256_extractf128_ps(t8, 1), _mm256_castps256_ps128(t8));
  const __m128 t2 = _mm_add_ps(t4, _mm_movehl_ps(t4, t4));
  return _mm_cvtss_f32(_mm_add_ss(t2, _mm_movehdup_ps(t2)));
}

template <class D>
constexpr bool kHasOne = requires(const uint8_t* w) {
  D::one(w, 0);
};

// Σ over `in` elements, 4 vectors (two chunks) per step; each activation row has 2 FMA chains whatever NX is.
template <class D, int NX>
void dot_nx(const uint8_t* w, const float* x, int64_t ldx, int64_t in, float* out) {
  constexpr int kSets = 2;  // the same chains for every NX: a row sums in one order alone or in a batch
  __m512 acc[kSets][NX];
  for (auto& a : acc)
    for (auto& v : a) v = _mm512_setzero_ps();
  auto fma = [&](const __m512* v, int n_vec, const float* xp) {
    for (int i = 0; i < n_vec; ++i)
      for (int j = 0; j < NX; ++j)
        acc[i % kSets][j] = _mm512_fmadd_ps(v[i], _mm512_loadu_ps(xp + j * ldx + 16 * i), acc[i % kSets][j]);
  };
  int64_t n_blocks = in / (32 * D::kChunks), b = 0;
  __m512 v[4];
  if constexpr (D::kChunks == 1) {
    auto one_chunk = [&](int64_t i, __m512* dst) {
      const uint8_t* blk = w + i * D::kBytes;
      D::chunk(blk, D::header(blk), 0, dst);
    };
    for (; b + 2 <= n_blocks; b += 2) {
      one_chunk(b, v);
      one_chunk(b + 1, v + 2);
      fma(v, 4, x + b * 32);
    }
    if (b < n_blocks) {
      one_chunk(b, v);
      fma(v, 2, x + b * 32);
    }
  } else {
    for (; b < n_blocks; ++b) {
      const uint8_t* blk = w + b * D::kBytes;
      auto hdr = D::header(blk);
      for (int c = 0; c < D::kChunks; c += 2) {
        D::chunk(blk, hdr, c, v);
        D::chunk(blk, hdr, c + 1, v + 2);
        fma(v, 4, x + (b * D::kChunks + c) * 32);
      }
    }
  }
  for (int j = 0; j < NX; ++j) {
    __m512 s = acc[0][j];
    for (int i = 1; i < kSets; ++i) s = _mm512_add_ps(s, acc[i][j]);
    out[j] = hsum(s);
    if constexpr (kHasOne<D>) {
      for (int64_t k = n_blocks * 32; k < in; ++k) out[j] += D::one(w, k) * x[j * ldx + k];
    }
  }
}

template <class D>
void row_dot(const uint8_t* w, const float* x, int64_t ldx, int nx, int64_t in, float* out) {
  switch (nx) {
    case 1: dot_nx<D, 1>(w, x, ldx, in, out); return;
    case 2: dot_nx<D, 2>(w, x, ldx, in, out); return;
    case 3: dot_nx<D, 3>(w, x, ldx, in, out); return;
    case 4: dot_nx<D, 4>(w, x, ldx, in, out); return;
    case 5: dot_nx<D, 5>(w, x, ldx, in, out); return;
    case 6: dot_nx<D, 6>(w, x, ldx, in, out); return;
    case 7: dot_nx<D, 7>(w, x, ldx, in, out); return;
    default: dot_nx<D, 8>(w, x, ldx, in, out); return;
  }
}

template <class D>
void dequant(const uint8_t* w, float* dst, int64_t in) {
  int64_t n_blocks = in / (32 * D::kChunks);
  for (int64_t b = 0; b < n_blocks; ++b) {
    const uint8_t* blk = w + b * D::kBytes;
    auto hdr = D::header(blk);
    for (int c = 0; c < D::kChunks; ++c) {
      __m512 v[2];
      D::chunk(blk, hdr, c, v);
      _mm512_storeu_ps(dst + (b * D::kChunks + c) * 32, v[0]);
      _mm512_storeu_ps(dst + (b * D::kChunks + c) * 32 + 16, v[1]);
    }
  }
  if constexpr (kHasOne<D>) {
    for (int64_t k = n_blocks * 32; k < in; ++k) dst[k] = D::one(w, k);
  }
}

__mmask16 lane_mask(int n) { return n >= 16 ? static_cast<__mmask16>(0xFFFF) : static_cast<__mmask16>((1u << n) - 1); }

template <int M>
void micro_m(const float* a, int64_t lda, const float* p, int64_t kc, float* c, int64_t ldc, int n_valid) {
  __m512 acc[M][2];
  for (auto& r : acc) r[0] = r[1] = _mm512_setzero_ps();
  for (int64_t k = 0; k < kc; ++k) {
    __m512 p0 = _mm512_loadu_ps(p + k * kNr), p1 = _mm512_loadu_ps(p + k * kNr + 16);
    for (int i = 0; i < M; ++i) {
      __m512 av = _mm512_set1_ps(a[i * lda + k]);
      acc[i][0] = _mm512_fmadd_ps(av, p0, acc[i][0]);
      acc[i][1] = _mm512_fmadd_ps(av, p1, acc[i][1]);
    }
  }
  __mmask16 m0 = lane_mask(n_valid), m1 = lane_mask(n_valid > 16 ? n_valid - 16 : 0);
  for (int i = 0; i < M; ++i) {
    float* ci = c + i * ldc;
    _mm512_mask_storeu_ps(ci, m0, _mm512_add_ps(_mm512_maskz_loadu_ps(m0, ci), acc[i][0]));
    _mm512_mask_storeu_ps(ci + 16, m1, _mm512_add_ps(_mm512_maskz_loadu_ps(m1, ci + 16), acc[i][1]));
  }
}

void micro(const float* a, int64_t lda, int m, const float* p, int64_t kc, float* c, int64_t ldc, int n_valid) {
  with_micro_rows(m, [&](auto rows) { micro_m<decltype(rows)::value>(a, lda, p, kc, c, ldc, n_valid); });
}

// Chains of dot_nx over decoded weights: set 0 takes the even 16-lane vectors along k, set 1 the odd ones.
constexpr int kTileRows = 3, kTileCols = 4, kAccFloats = 32;

template <int NX>
void tile_nx(const float* w, int64_t ldw, const float* x, int64_t ldx, int64_t kc, float* acc, int64_t ld_acc,
             bool first) {
  __m512 a[kTileRows][NX][2];
  for (int r = 0; r < kTileRows; ++r)
    for (int j = 0; j < NX; ++j)
      for (int s = 0; s < 2; ++s)
        a[r][j][s] = first ? _mm512_setzero_ps() : _mm512_loadu_ps(acc + (r * ld_acc + j) * kAccFloats + 16 * s);
  for (int64_t k = 0; k < kc; k += 32) {
    __m512 wv[kTileRows][2];  // held for the whole step; each x vector is loaded once and used by every weight row
    for (int r = 0; r < kTileRows; ++r)
      for (int s = 0; s < 2; ++s) wv[r][s] = _mm512_loadu_ps(w + r * ldw + k + 16 * s);
    for (int j = 0; j < NX; ++j)
      for (int s = 0; s < 2; ++s) {
        __m512 xv = _mm512_loadu_ps(x + j * ldx + k + 16 * s);
        asm("" : "+v"(xv));  // keep it in a register: GCC would otherwise fold one load into each FMA
        for (int r = 0; r < kTileRows; ++r) a[r][j][s] = _mm512_fmadd_ps(wv[r][s], xv, a[r][j][s]);
      }
  }
  for (int r = 0; r < kTileRows; ++r)
    for (int j = 0; j < NX; ++j)
      for (int s = 0; s < 2; ++s) _mm512_storeu_ps(acc + (r * ld_acc + j) * kAccFloats + 16 * s, a[r][j][s]);
}

void tile(const float* w, int64_t ldw, const float* x, int64_t ldx, int nx, int64_t kc, float* acc, int64_t ld_acc,
          bool first) {
  switch (nx) {
    case 1: tile_nx<1>(w, ldw, x, ldx, kc, acc, ld_acc, first); return;
    case 2: tile_nx<2>(w, ldw, x, ldx, kc, acc, ld_acc, first); return;
    case 3: tile_nx<3>(w, ldw, x, ldx, kc, acc, ld_acc, first); return;
    default: tile_nx<4>(w, ldw, x, ldx, kc, acc, ld_acc, first); return;
  }
}

// hsum of each output's two chains for n outputs (kAccFloats apart): 16 at a time as a transposed tree that pairs the
// same lanes in the same order as hsum, then one at a time.
void finish(const float* acc, int64_t n, float* out) {
  auto chains = [&](int64_t j) {
    return _mm512_add_ps(_mm512_loadu_ps(acc + j * kAccFloats), _mm512_loadu_ps(acc + j * kAccFloats + 16));
  };
  int64_t j = 0;
  for (; j + 16 <= n; j += 16) {
    __m512 l1[8], l2[4], l3[2];
    for (int m = 0; m < 8; ++m) {  // lanes (i, i+8): output 2m in lanes 0-7, 2m+1 in lanes 8-15
      const __m512 a = chains(j + 2 * m), b = chains(j + 2 * m + 1);
      l1[m] = _mm512_add_ps(_mm512_shuffle_f32x4(a, b, 0x44), _mm512_shuffle_f32x4(a, b, 0xEE));
    }
    for (int p = 0; p < 4; ++p)  // (i, i+4): 128-bit lane q holds output 4p+q
      l2[p] = _mm512_add_ps(_mm512_shuffle_f32x4(l1[2 * p], l1[2 * p + 1], 0x88),
                            _mm512_shuffle_f32x4(l1[2 * p], l1[2 * p + 1], 0xDD));
    for (int h = 0; h < 2; ++h)  // (i, i+2): lane q holds outputs 8h+q and 8h+4+q, two partial sums each
      l3[h] = _mm512_add_ps(_mm512_shuffle_ps(l2[2 * h], l2[2 * h + 1], 0x44),
                            _mm512_shuffle_ps(l2[2 * h], l2[2 * h + 1], 0xEE));
    // (i, i+1): lane 4q+s holds output 4s+q.
    const __m512 r = _mm512_add_ps(_mm512_shuffle_ps(l3[0], l3[1], 0x88), _mm512_shuffle_ps(l3[0], l3[1], 0xDD));
    const __m512i order = _mm512_setr_epi32(0, 4, 8, 12, 1, 5, 9, 13, 2, 6, 10, 14, 3, 7, 11, 15);
    _mm512_storeu_ps(out + j, _mm512_permutexvar_ps(order, r));
  }
  for (; j < n; ++j) out[j] = hsum(chains(j));
}

template <class D>
void set(GemmKernels& k, DType t) {
  k.row_dot[static_cast<int>(t)] = &row_dot<D>;
  k.dequant[static_cast<int>(t)] = &dequant<D>;
}

GemmKernels make_table() {
  GemmKernels k{};
#define CAI_SET_DECODER(D, t) set<D>(k, DType::t);
  CAI_GEMM_DECODERS(CAI_SET_DECODER)
#undef CAI_SET_DECODER
  k.micro = &micro;
  k.nr = kNr;
  k.mr = kMr;
  k.rows_dot = &rows_dot_avx512;
  k.rows_axpy = &rows_axpy_avx512;
  k.silu_mul = &silu_mul_avx512;
  k.softmax_row = &softmax_row_avx512;
  k.tile = &tile;
  k.finish = &finish;
  k.tile_rows = kTileRows;
  k.tile_cols = kTileCols;
  k.acc_floats = kAccFloats;
  return k;
}

}  // namespace

const GemmKernels& gemm_kernels_avx512() {
  static const GemmKernels k = make_table();
  return k;
}

}  // namespace cai::hal::cpu

#endif
