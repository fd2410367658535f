// AVX2 GEMM kernels: per-dtype 32-element decoders (the int8-code types via gemm_codes*_avx2.h), fused dequant·dot,
// row dequant and the 6×16 micro-kernel.
// Compiled with -mavx2 -mfma -mf16c; everything here has internal linkage so no AVX2 code leaks into other TUs.
#include "hal/cpu/kernels/gemm_kernels.h"

#if defined(__AVX2__) && defined(__FMA__) && defined(__F16C__)

// GCC 12's intrinsic headers trip -W(maybe-)uninitialized on their own _mm*_undefined_* helpers (GCC bug 105593).
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#include <immintrin.h>

#include <cstring>

#include "core/quant_k.h"
#include "hal/cpu/kernels/gemm_codes_iq_avx2.h"
#include "hal/cpu/kernels/vec_simd.h"
#include "hal/cpu/kernels/gemm_decoder_list.h"

namespace cai::hal::cpu {

namespace {

constexpr int kNr = 16;
constexpr int kMr = 6;

// The low 8 bytes of `bytes` minus `bias`, as floats (exact: small integers).
__m256 u8_minus_ps(__m128i bytes, int bias) {
  return _mm256_cvtepi32_ps(_mm256_sub_epi32(_mm256_cvtepu8_epi32(bytes), _mm256_set1_epi32(bias)));
}

// 32 unsigned codes in q → 4 vectors of (scale · code − offset), in element order.
void codes_to_ps(__m256i q, __m256 scale, __m256 offset, __m256* v) {
  __m128i a = _mm256_castsi256_si128(q), b = _mm256_extracti128_si256(q, 1);
  __m128i parts[4] = {a, _mm_srli_si128(a, 8), b, _mm_srli_si128(b, 8)};
  for (int i = 0; i < 4; ++i) {
    __m256 f = _mm256_cvtepi32_ps(_mm256_cvtepu8_epi32(parts[i]));
    v[i] = _mm256_sub_ps(_mm256_mul_ps(scale, f), offset);
  }
}

// A decoder walks a row block by block (kBytes each, kChunks chunks of 32 elements): header() reads what a block's
// chunks share, chunk() yields chunk c as four 8-float vectors. Plain types use 32-element "blocks" plus one() for
// a ragged tail.
struct NoHdr {};

struct F32D {
  static constexpr int kChunks = 1, kBytes = 128;
  static NoHdr header(const uint8_t*) { return {}; }
  static void chunk(const uint8_t* b, NoHdr, int, __m256* v) {
    for (int i = 0; i < 4; ++i) v[i] = _mm256_loadu_ps(reinterpret_cast<const float*>(b) + 8 * i);
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
  static void chunk(const uint8_t* b, NoHdr, int, __m256* v) {
    for (int i = 0; i < 4; ++i) v[i] = _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(b + 16 * i)));
  }
  static float one(const uint8_t* w, int64_t k) { return f16_at(w + 2 * k); }
};

struct BF16D {
  static constexpr int kChunks = 1, kBytes = 64;
  static NoHdr header(const uint8_t*) { return {}; }
  static void chunk(const uint8_t* b, NoHdr, int, __m256* v) {
    for (int i = 0; i < 4; ++i) {
      __m256i u = _mm256_cvtepu16_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(b + 16 * i)));
      v[i] = _mm256_castsi256_ps(_mm256_slli_epi32(u, 16));
    }
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
  static __m256 widen(const uint8_t* p) {
    __m128i c = _mm_cvtepu8_epi16(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(p)));
    __m128i mag = _mm_and_si128(c, _mm_set1_epi16(0x7F));
    __m128i h = _mm_or_si128(_mm_slli_epi16(mag, 7), _mm_slli_epi16(_mm_srli_epi16(c, 7), 15));
    __m256 f = _mm256_mul_ps(_mm256_cvtph_ps(h), _mm256_set1_ps(256.0f));
    __m256 nan = _mm256_castsi256_ps(_mm256_cvtepi16_epi32(_mm_cmpeq_epi16(mag, _mm_set1_epi16(0x7F))));
    return _mm256_blendv_ps(f, _mm256_set1_ps(__builtin_nanf("")), nan);
  }
  static void chunk(const uint8_t* b, NoHdr, int, __m256* v) {
    for (int i = 0; i < 4; ++i) v[i] = widen(b + 8 * i);
  }
  static float one(const uint8_t* w, int64_t k) { return fp8_e4m3_to_f32(w[k]); }
};

struct Q8_0D {
  static constexpr int kChunks = 1, kBytes = 34;
  static NoHdr header(const uint8_t*) { return {}; }
  static void chunk(const uint8_t* b, NoHdr, int, __m256* v) {
    __m256 d = _mm256_set1_ps(f16_at(b));
    for (int i = 0; i < 4; ++i) {
      __m128i q = _mm_loadl_epi64(reinterpret_cast<const __m128i*>(b + 2 + 8 * i));
      v[i] = _mm256_mul_ps(d, _mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(q)));
    }
  }
};

struct Q4_0D {
  static constexpr int kChunks = 1, kBytes = 18;
  static NoHdr header(const uint8_t*) { return {}; }
  static void chunk(const uint8_t* b, NoHdr, int, __m256* v) {
    __m256 d = _mm256_set1_ps(f16_at(b));
    __m128i q = _mm_loadu_si128(reinterpret_cast<const __m128i*>(b + 2));
    __m128i lo = _mm_and_si128(q, _mm_set1_epi8(15));
    __m128i hi = _mm_and_si128(_mm_srli_epi16(q, 4), _mm_set1_epi8(15));
    __m128i parts[4] = {lo, _mm_srli_si128(lo, 8), hi, _mm_srli_si128(hi, 8)};
    for (int i = 0; i < 4; ++i) v[i] = _mm256_mul_ps(d, u8_minus_ps(parts[i], 8));
  }
};

// Q4_K / Q5_K: chunk s is sub-block s, 32 codes (plus the 5th bit from qh for Q5_K).
template <bool kFive>
struct QxKD {
  static constexpr int kChunks = 8, kBytes = kFive ? 176 : 144;
  static qc::KHdr header(const uint8_t* b) { return qc::k_header(b); }
  static void chunk(const uint8_t* b, const qc::KHdr& hd, int s, __m256* v) {
    __m256 dsc = _mm256_set1_ps(hd.dsc[s]), dm = _mm256_set1_ps(hd.dm[s]);
    const uint8_t* qs = b + (kFive ? 48 : 16) + 32 * (s >> 1);
    __m256i q = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(qs));
    q = _mm256_and_si256(_mm256_srl_epi16(q, _mm_cvtsi32_si128(4 * (s & 1))), _mm256_set1_epi8(15));
    if (kFive) {
      __m256i h = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(b + 16));
      h = _mm256_and_si256(_mm256_srl_epi16(h, _mm_cvtsi32_si128(s)), _mm256_set1_epi8(1));
      q = _mm256_or_si256(q, _mm256_slli_epi16(h, 4));
    }
    codes_to_ps(q, dsc, dm, v);
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
  static void chunk(const uint8_t* b, const Q6Hdr& hd, int c, __m256* v) {
    int h = c >> 2, gi = c & 3;
    __m256i lo = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(b + 64 * h + 32 * (gi & 1)));
    lo = _mm256_and_si256(_mm256_srl_epi16(lo, _mm_cvtsi32_si128(gi < 2 ? 0 : 4)), _mm256_set1_epi8(15));
    __m256i hi = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(b + 128 + 32 * h));
    hi = _mm256_and_si256(_mm256_srl_epi16(hi, _mm_cvtsi32_si128(2 * gi)), _mm256_set1_epi8(3));
    __m256i q = _mm256_or_si256(lo, _mm256_slli_epi16(hi, 4));
    __m256 s0 = _mm256_set1_ps(hd.dsc[2 * c]), s1 = _mm256_set1_ps(hd.dsc[2 * c + 1]);
    __m128i a = _mm256_castsi256_si128(q), bq = _mm256_extracti128_si256(q, 1);
    __m128i parts[4] = {a, _mm_srli_si128(a, 8), bq, _mm_srli_si128(bq, 8)};
    for (int i = 0; i < 4; ++i) v[i] = _mm256_mul_ps(i < 2 ? s0 : s1, u8_minus_ps(parts[i], 32));
  }
};

// The types decoded to int8 codes by gemm_codes*_avx2.h: element i = s[i/16]·code (− m[i/16]).
template <class C>
struct CodesD {
  static constexpr int kChunks = C::kChunks, kBytes = C::kBytes;
  static typename C::Hdr header(const uint8_t* b) { return C::header(b); }
  [[gnu::always_inline]] static void chunk(const uint8_t* b, const typename C::Hdr& hd, int c, __m256* v) {
    const qc::Chunk k = C::chunk(b, hd, c);
    __m128i lo = _mm256_castsi256_si128(k.q), hi = _mm256_extracti128_si256(k.q, 1);
    __m128i parts[4] = {lo, _mm_srli_si128(lo, 8), hi, _mm_srli_si128(hi, 8)};
    for (int i = 0; i < 4; ++i) {
      const __m256 f = _mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(parts[i])), s = _mm256_set1_ps(k.s[i / 2]);
      v[i] = C::kAffine ? _mm256_sub_ps(_mm256_mul_ps(s, f), _mm256_set1_ps(k.m[i / 2])) : _mm256_mul_ps(s, f);
    }
  }
};

template <class D>
constexpr bool kHasOne = requires(const uint8_t* w) {
  D::one(w, 0);
};

// Σ over `in` elements, one chunk (4 vectors) per step; each activation row has 2 FMA chains whatever NX is.
template <class D, int NX>
void dot_nx(const uint8_t* w, const float* x, int64_t ldx, int64_t in, float* out) {
  constexpr int kSets = 2;  // the same chains for every NX: a row sums in one order alone or in a batch
  __m256 acc[kSets][NX];
  for (auto& a : acc)
    for (auto& v : a) v = _mm256_setzero_ps();
  int64_t n_blocks = in / (32 * D::kChunks);
  for (int64_t b = 0; b < n_blocks; ++b) {
    const uint8_t* blk = w + b * D::kBytes;
    auto hdr = D::header(blk);
    for (int c = 0; c < D::kChunks; ++c) {
      __m256 v[4];
      D::chunk(blk, hdr, c, v);
      const float* xp = x + (b * D::kChunks + c) * 32;
      for (int i = 0; i < 4; ++i)
        for (int j = 0; j < NX; ++j)
          acc[i % kSets][j] = _mm256_fmadd_ps(v[i], _mm256_loadu_ps(xp + j * ldx + 8 * i), acc[i % kSets][j]);
    }
  }
  for (int j = 0; j < NX; ++j) {
    __m256 s = acc[0][j];
    for (int i = 1; i < kSets; ++i) s = _mm256_add_ps(s, acc[i][j]);
    out[j] = hsum8(s);
    if constexpr (kHasOne<D>) {
      for (int64_t k = n_blocks * 32; k < in; ++k) out[j] += D::one(w, k) * x[j * ldx + k];
    }
  }
}

template <class D>
void row_dot(const uint8_t* w, const float* x, int64_t ldx, int nx, int64_t in, float* out) {
  if (nx > 4) {  // 16 ymm registers hold the chains of at most 4 rows; each row's sum order is the same either way
    dot_nx<D, 4>(w, x, ldx, in, out);
    row_dot<D>(w, x + 4 * ldx, ldx, nx - 4, in, out + 4);
    return;
  }
  switch (nx) {
    case 1: dot_nx<D, 1>(w, x, ldx, in, out); return;
    case 2: dot_nx<D, 2>(w, x, ldx, in, out); return;
    case 3: dot_nx<D, 3>(w, x, ldx, in, out); return;
    default: dot_nx<D, 4>(w, x, ldx, in, out); return;
  }
}

template <class D>
void dequant(const uint8_t* w, float* dst, int64_t in) {
  int64_t n_blocks = in / (32 * D::kChunks);
  for (int64_t b = 0; b < n_blocks; ++b) {
    const uint8_t* blk = w + b * D::kBytes;
    auto hdr = D::header(blk);
    for (int c = 0; c < D::kChunks; ++c) {
      __m256 v[4];
      D::chunk(blk, hdr, c, v);
      for (int i = 0; i < 4; ++i) _mm256_storeu_ps(dst + (b * D::kChunks + c) * 32 + 8 * i, v[i]);
    }
  }
  if constexpr (kHasOne<D>) {
    for (int64_t k = n_blocks * 32; k < in; ++k) dst[k] = D::one(w, k);
  }
}

template <int M>
void micro_m(const float* a, int64_t lda, const float* p, int64_t kc, float* c, int64_t ldc, int n_valid) {
  __m256 acc[M][2];
  for (auto& r : acc) r[0] = r[1] = _mm256_setzero_ps();
  for (int64_t k = 0; k < kc; ++k) {
    __m256 p0 = _mm256_loadu_ps(p + k * kNr), p1 = _mm256_loadu_ps(p + k * kNr + 8);
    for (int i = 0; i < M; ++i) {
      __m256 av = _mm256_broadcast_ss(a + i * lda + k);
      acc[i][0] = _mm256_fmadd_ps(av, p0, acc[i][0]);
      acc[i][1] = _mm256_fmadd_ps(av, p1, acc[i][1]);
    }
  }
  for (int i = 0; i < M; ++i) {
    float* ci = c + i * ldc;
    if (n_valid == kNr) {
      _mm256_storeu_ps(ci, _mm256_add_ps(_mm256_loadu_ps(ci), acc[i][0]));
      _mm256_storeu_ps(ci + 8, _mm256_add_ps(_mm256_loadu_ps(ci + 8), acc[i][1]));
    } else {
      alignas(32) float tmp[kNr];
      _mm256_store_ps(tmp, acc[i][0]);
      _mm256_store_ps(tmp + 8, acc[i][1]);
      for (int j = 0; j < n_valid; ++j) ci[j] += tmp[j];
    }
  }
}

void micro(const float* a, int64_t lda, int m, const float* p, int64_t kc, float* c, int64_t ldc, int n_valid) {
  with_micro_rows(m, [&](auto rows) { micro_m<decltype(rows)::value>(a, lda, p, kc, c, ldc, n_valid); });
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
  k.rows_dot = &rows_dot_avx2;
  k.rows_axpy = &rows_axpy_avx2;
  k.silu_mul = &silu_mul_avx2;
  k.softmax_row = &softmax_row_avx2;
  return k;
}

}  // namespace

const GemmKernels& gemm_kernels_avx2() {
  static const GemmKernels k = make_table();
  return k;
}

}  // namespace cai::hal::cpu

#endif
