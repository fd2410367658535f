// SIMD integer dot-product kernels for the K-quants (Q2_K..Q6_K), shared by the AVX2 and the AVX-512 VNNI tables:
// included after qdot_avx2.h (dot_u8s8, load_act, dot_any_nx) by qdot_avx2.cpp and qdot_avx512vnni.cpp; everything
// here has internal linkage. A super-block is first decoded once into 8 vectors of 32 unsigned codes (one per
// activation block it meets) plus its scales; then each activation row takes 8 u8 × s8 integer dots (8 int32 lanes
// each), scales them in float once per activation block, and subtracts one vector term for the weight offsets
// (mins, or the bias of the signed types) built from the ActBlockQ8::sum fields of its 8 activation blocks. Every
// row runs the same float operations in the same order whatever the number of rows (batch invariance). Layouts:
// docs/design/formats.md#k-quants, core/quant_k.cpp; the scalar reference is qdot_k_scalar.h.
#pragma once

#include <immintrin.h>

#include <cstdint>
#include <utility>

#include "core/block_bytes.h"
#include "core/quant_k.h"

namespace cai::hal::cpu {
namespace {

// Where the weight scales enter. With VNNI the integer dot is one vpdpbusd, and the scales are applied in float
// (one multiply per activation block, folded into the a.d factor for Q4_K / Q5_K). Without it the dot is
// vpmaddubsw + vpmaddwd, and the vpmaddwd multiplies by the (small integer) scales instead of by 1, leaving only d
// for the float side.
#if defined(__AVX512VNNI__) && defined(__AVX512VL__)
inline constexpr bool kKIntScales = false;
#else
inline constexpr bool kKIntScales = true;
#endif

// One super-block, decoded for the 8 activation blocks it meets. Element l (0..31) of activation block b has the
// weight value d·sc(b, l)·codes[b][l] − offd·(offset coefficient of its 16-element half, read from `off`).
struct KSuper {
  __m256i codes[8];   // unsigned codes (≤ 63: the vpmaddubsw pairs stay far below int16 saturation)
  __m256 scale[8];    // float scales (VNNI): lanes 0..3 d·sc of elements 0..15 of block b, lanes 4..7 of 16..31
  __m256 bscale;      // float scales, one per 32 elements (VNNI, Q4_K / Q5_K): lane b = d·sc_b
  __m256i iscale[8];  // integer scales (AVX2): int16 lanes 0..7 sc of elements 0..15 of block b, 8..15 of 16..31
  float d;            // the factor left out of iscale
  __m256i off;        // int32 lane b = int16 pair (coefficient of a_b.sum[0], of a_b.sum[1])
  float offd;         // float factor of the offset term: dmin (Q2_K, Q4_K, Q5_K), 4·d (Q3_K), 32·d (Q6_K)
};

// Scales of a type with one scale per 16 elements: sc16 holds the 16 scales of the super-block as int16 lanes.
[[gnu::always_inline]] inline void k_scales16(__m256i sc16, float d, KSuper& ks) {
  if constexpr (kKIntScales) {
    // Int32 lane b of sc16 is the pair (sc_2b, sc_2b+1): broadcast it, then repeat sc_2b over the low 128 bits and
    // sc_2b+1 over the high 128 bits.
    const __m256i spread = _mm256_setr_epi8(0, 1, 0, 1, 0, 1, 0, 1, 0, 1, 0, 1, 0, 1, 0, 1,  //
                                            2, 3, 2, 3, 2, 3, 2, 3, 2, 3, 2, 3, 2, 3, 2, 3);
#pragma GCC unroll 8
    for (int b = 0; b < 8; ++b)
      ks.iscale[b] = _mm256_shuffle_epi8(_mm256_permutevar8x32_epi32(sc16, _mm256_set1_epi32(b)), spread);
    ks.d = d;
  } else {
    const __m256 vd = _mm256_set1_ps(d);
    const __m256 lo = _mm256_mul_ps(vd, _mm256_cvtepi32_ps(_mm256_cvtepi16_epi32(_mm256_castsi256_si128(sc16))));
    const __m256 hi = _mm256_mul_ps(vd, _mm256_cvtepi32_ps(_mm256_cvtepi16_epi32(_mm256_extracti128_si256(sc16, 1))));
#pragma GCC unroll 8
    for (int b = 0; b < 8; ++b) {  // lanes 0..3: scale 2b, lanes 4..7: scale 2b + 1 (of lo for b < 4, else of hi)
      const int k = 2 * (b % 4);
      const __m256i idx = _mm256_setr_epi32(k, k, k, k, k + 1, k + 1, k + 1, k + 1);
      ks.scale[b] = _mm256_permutevar8x32_ps(b < 4 ? lo : hi, idx);
    }
  }
}

// Scales of a type with one scale per 32 elements: int32 lane b of sc32 is the (non-negative) scale of block b.
[[gnu::always_inline]] inline void k_scales8(__m256i sc32, float d, KSuper& ks) {
  if constexpr (kKIntScales) {
    const __m256i pair = _mm256_or_si256(sc32, _mm256_slli_epi32(sc32, 16));  // as int16 lanes: sc_b, sc_b
#pragma GCC unroll 8
    for (int b = 0; b < 8; ++b) ks.iscale[b] = _mm256_permutevar8x32_epi32(pair, _mm256_set1_epi32(b));
    ks.d = d;
  } else {
    ks.bscale = _mm256_mul_ps(_mm256_set1_ps(d), _mm256_cvtepi32_ps(sc32));
  }
}

// Bits 2j..2j+1 of every byte of v, j = 0..3 (as a compile-time shift).
template <int J>
inline __m256i k_crumb(__m256i v) {
  return _mm256_and_si256(_mm256_srli_epi16(v, 2 * J), _mm256_set1_epi8(3));
}

// Per byte: bit S of v moved to bit D, all other bits 0 (the 16-bit shifts cannot carry it into the other byte).
template <int S, int D>
inline __m256i k_move_bit(__m256i v) {
  const __m256i b = _mm256_and_si256(v, _mm256_set1_epi8(static_cast<char>(1 << S)));
  if constexpr (D >= S)
    return _mm256_slli_epi16(b, D - S);
  else
    return _mm256_srli_epi16(b, S - D);
}

// codes[b] |= bit b of each byte of v, moved to bit D (b = 0..7).
template <int D>
[[gnu::always_inline]] inline void k_or_bits(__m256i v, __m256i* codes) {
  [&]<int... B>(std::integer_sequence<int, B...>) {
    ((codes[B] = _mm256_or_si256(codes[B], k_move_bit<B, D>(v))), ...);
  }
  (std::make_integer_sequence<int, 8>{});
}

inline __m256i k_load(const uint8_t* p) { return _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p)); }

// The 16 six-bit fields of a Q4_K / Q5_K scales field (12 bytes at p) as bytes: sc_0..7, then m_0..7. The same packing
// as quant_k::scale_min (docs/design/formats.md#k-quants), unpacked for all 16 at once: bytes 0..3 and 4..7 hold
// sc_0..3 and m_0..3 in their low 6 bits and the top 2 bits of sc_4..7 and m_4..7 in bits 6..7; bytes 8..11 hold the
// low 4 bits of sc_4..7 (low nibble) and m_4..7 (high nibble).
inline __m128i k_scale_min_bytes(const uint8_t* p) {
  const __m128i w =
      _mm_setr_epi32(static_cast<int>(block_bytes::load_u32(p)), static_cast<int>(block_bytes::load_u32(p + 4)), 0, 0);
  const __m128i w2 = _mm_set1_epi32(static_cast<int>(block_bytes::load_u32(p + 8)));
  const __m128i low = _mm_and_si128(w, _mm_set1_epi8(0x3F));  // sc_0..3, m_0..3
  const __m128i nib = _mm_and_si128(_mm_srlv_epi32(w2, _mm_setr_epi32(0, 4, 0, 0)), _mm_set1_epi8(15));
  const __m128i high = _mm_or_si128(nib, _mm_and_si128(_mm_srli_epi32(w, 2), _mm_set1_epi8(0x30)));  // sc/m_4..7
  return _mm_unpacklo_epi32(low, high);
}

// Q4_K / Q5_K (qh null for Q4_K): sub-block s = activation block s; codes from the low (even s) or high (odd s)
// nibbles of qs[32·(s/2) ..], plus bit s of qh[l] as the 5th bit; value d·sc_s·q − dmin·m_s.
[[gnu::always_inline]] inline void k_decode_q4or5(const uint8_t* blk, const uint8_t* qh, const uint8_t* qs,
                                                  KSuper& ks) {
  const __m256i nib = _mm256_set1_epi8(15);
#pragma GCC unroll 4
  for (int c = 0; c < 4; ++c) {
    const __m256i v = k_load(qs + 32 * c);
    ks.codes[2 * c] = _mm256_and_si256(v, nib);
    ks.codes[2 * c + 1] = _mm256_and_si256(_mm256_srli_epi16(v, 4), nib);
  }
  if (qh) k_or_bits<4>(k_load(qh), ks.codes);
  const __m128i scm = k_scale_min_bytes(blk + 4);
  const __m256i vm = _mm256_cvtepu8_epi32(_mm_srli_si128(scm, 8));
  k_scales8(_mm256_cvtepu8_epi32(scm), f16_at(blk), ks);
  ks.off = _mm256_or_si256(vm, _mm256_slli_epi32(vm, 16));  // (m_b, m_b): both halves share the min
  ks.offd = f16_at(blk + 2);
}

// Q6_K: block b = 4h + g takes the low nibble (g < 2) or high nibble (g ≥ 2) of ql[64h + 32·(g & 1) ..] and bits
// 2g..2g+1 of qh[32h ..] as its high 2 bits; value d·sc_k·(q − 32), k = element / 16.
[[gnu::always_inline]] inline void k_decode_q6(const uint8_t* blk, KSuper& ks) {
  const __m256i nib = _mm256_set1_epi8(15), top = _mm256_set1_epi8(0x30);
#pragma GCC unroll 2
  for (int h = 0; h < 2; ++h) {
    const __m256i l0 = k_load(blk + 64 * h), l1 = k_load(blk + 64 * h + 32), hb = k_load(blk + 128 + 32 * h);
    __m256i* c = ks.codes + 4 * h;
    c[0] = _mm256_or_si256(_mm256_and_si256(l0, nib), _mm256_and_si256(_mm256_slli_epi16(hb, 4), top));
    c[1] = _mm256_or_si256(_mm256_and_si256(l1, nib), _mm256_and_si256(_mm256_slli_epi16(hb, 2), top));
    c[2] = _mm256_or_si256(_mm256_and_si256(_mm256_srli_epi16(l0, 4), nib), _mm256_and_si256(hb, top));
    c[3] = _mm256_or_si256(_mm256_and_si256(_mm256_srli_epi16(l1, 4), nib),
                           _mm256_and_si256(_mm256_srli_epi16(hb, 2), top));
  }
  const __m128i s8 = _mm_loadu_si128(reinterpret_cast<const __m128i*>(blk + 192));
  const float d = f16_at(blk + 208);
  ks.off = _mm256_cvtepi8_epi16(s8);  // bias 32 of each half times its scale
  k_scales16(ks.off, d, ks);
  ks.offd = 32.0f * d;
}

// The 2-bit codes of a Q2_K / Q3_K super-block: block b = 4h + j is bits 2j of qs[32h ..].
[[gnu::always_inline]] inline void k_crumbs(const uint8_t* qs, KSuper& ks) {
#pragma GCC unroll 2
  for (int h = 0; h < 2; ++h) {
    const __m256i v = k_load(qs + 32 * h);
    ks.codes[4 * h + 0] = k_crumb<0>(v);
    ks.codes[4 * h + 1] = k_crumb<1>(v);
    ks.codes[4 * h + 2] = k_crumb<2>(v);
    ks.codes[4 * h + 3] = k_crumb<3>(v);
  }
}

// Q2_K: scales[k] holds scale (low nibble) and min (high nibble) of 16-element group k; value d·sc·q − dmin·m.
[[gnu::always_inline]] inline void k_decode_q2(const uint8_t* blk, KSuper& ks) {
  k_crumbs(blk + 16, ks);
  const __m128i b = _mm_loadu_si128(reinterpret_cast<const __m128i*>(blk)), nib = _mm_set1_epi8(15);
  const __m128i sc = _mm_and_si128(b, nib), m = _mm_and_si128(_mm_srli_epi16(b, 4), nib);
  k_scales16(_mm256_cvtepu8_epi16(sc), f16_at(blk + 80), ks);
  ks.off = _mm256_cvtepu8_epi16(m);
  ks.offd = f16_at(blk + 82);
}

// The 16 signed Q3_K scales (12 bytes at p) as bytes, unpacked as quant_k::q3_k_scale reads them: low 4 bits from
// the nibbles of bytes 0..7 (low nibbles for k < 8), high 2 bits from bits 2·(k / 4) of byte 8 + k % 4, minus 32.
inline __m128i k_q3_scales(const uint8_t* p) {
  const __m128i b = _mm_loadl_epi64(reinterpret_cast<const __m128i*>(p)), nib = _mm_set1_epi8(15);
  const __m128i low = _mm_unpacklo_epi64(_mm_and_si128(b, nib), _mm_and_si128(_mm_srli_epi16(b, 4), nib));
  const __m128i h = _mm_srlv_epi32(_mm_set1_epi32(static_cast<int>(block_bytes::load_u32(p + 8))),
                                   _mm_setr_epi32(0, 2, 4, 6));  // byte k holds the high bits of scale k in bits 0..1
  const __m128i high = _mm_slli_epi16(_mm_and_si128(h, _mm_set1_epi8(3)), 4);
  return _mm_sub_epi8(_mm_or_si128(low, high), _mm_set1_epi8(32));
}

// Q3_K: code = 2-bit low part + 4·(bit 4h + j of hmask[l]); value d·scale_k·(code − 4).
[[gnu::always_inline]] inline void k_decode_q3(const uint8_t* blk, KSuper& ks) {
  k_crumbs(blk + 32, ks);
  k_or_bits<2>(k_load(blk), ks.codes);  // hmask bit 4h + j = b
  const __m128i s8 = k_q3_scales(blk + 96);
  const float d = f16_at(blk + 108);
  ks.off = _mm256_cvtepi8_epi16(s8);  // bias 4 of each half times its scale
  k_scales16(ks.off, d, ks);
  ks.offd = 4.0f * d;
}

template <DType T>
[[gnu::always_inline]] inline void k_decode(const uint8_t* blk, KSuper& ks) {
  if constexpr (T == DType::kQ4_K) k_decode_q4or5(blk, nullptr, blk + 16, ks);
  if constexpr (T == DType::kQ5_K) k_decode_q4or5(blk, blk + 16, blk + 48, ks);
  if constexpr (T == DType::kQ6_K) k_decode_q6(blk, ks);
  if constexpr (T == DType::kQ2_K) k_decode_q2(blk, ks);
  if constexpr (T == DType::kQ3_K) k_decode_q3(blk, ks);
}

// One activation row's share of one super-block, as 8 float lanes to be summed: Σ_b a_b.d·(scaled integer dot of
// block b) − Σ_b offd·a_b.d·(off_b · a_b.sum). `a` is the row's first activation block of this super-block; kPer32:
// a type with one scale per 32 elements (Q4_K, Q5_K: ks.bscale instead of ks.scale where the scales are float).
template <bool kPer32>
[[gnu::always_inline]] inline __m256 k_row_super(const KSuper& ks, const ActBlockQ8* a) {
  // The 8 blocks' d and (sum[0], sum[1]) fields as lanes b: each block's first 8 bytes, paired and transposed.
  __m128i h[4];
#pragma GCC unroll 4
  for (int i = 0; i < 4; ++i)
    h[i] = _mm_unpacklo_epi64(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(a + 2 * i)),
                              _mm_loadl_epi64(reinterpret_cast<const __m128i*>(a + 2 * i + 1)));
  const __m256 lo = _mm256_castsi256_ps(_mm256_set_m128i(h[2], h[0]));  // blocks 0, 1 | 4, 5
  const __m256 hi = _mm256_castsi256_ps(_mm256_set_m128i(h[3], h[1]));  // blocks 2, 3 | 6, 7
  const __m256 ad = _mm256_shuffle_ps(lo, hi, _MM_SHUFFLE(2, 0, 2, 0));
  const __m256i sums = _mm256_castps_si256(_mm256_shuffle_ps(lo, hi, _MM_SHUFFLE(3, 1, 3, 1)));
  const __m256 off = _mm256_cvtepi32_ps(_mm256_madd_epi16(sums, ks.off));
  // Q4_K / Q5_K with float scales: one product d·sc_b·a_b.d per block, lane b (otherwise unused).
  const __m256 sa = kPer32 && !kKIntScales ? _mm256_mul_ps(ks.bscale, ad) : ad;
  __m256 t[2] = {_mm256_setzero_ps(), _mm256_setzero_ps()};  // two chains: even and odd blocks
#pragma GCC unroll 8
  for (int b = 0; b < 8; ++b) {
    __m256 p, f;  // t += p·f
    if constexpr (kKIntScales) {
      const __m256i pairs = _mm256_maddubs_epi16(ks.codes[b], load_act(a[b]));  // int16: Σ of 2 products
      p = _mm256_cvtepi32_ps(_mm256_madd_epi16(pairs, ks.iscale[b]));
      f = _mm256_set1_ps(a[b].d);
    } else if constexpr (kPer32) {
      p = _mm256_cvtepi32_ps(dot_u8s8(ks.codes[b], load_act(a[b])));
      f = _mm256_permutevar8x32_ps(sa, _mm256_set1_epi32(b));
    } else {
      p = _mm256_mul_ps(_mm256_cvtepi32_ps(dot_u8s8(ks.codes[b], load_act(a[b]))), ks.scale[b]);
      f = _mm256_set1_ps(a[b].d);
    }
    t[b % 2] = _mm256_fmadd_ps(p, f, t[b % 2]);
  }
  __m256 dots = _mm256_add_ps(t[0], t[1]);
  if constexpr (kKIntScales) dots = _mm256_mul_ps(dots, _mm256_set1_ps(ks.d));
  return _mm256_fnmadd_ps(_mm256_mul_ps(ad, _mm256_set1_ps(ks.offd)), off, dots);
}

// One weight row times NX activation rows: decode each super-block once, then add each row's share to that row's
// own 8-lane accumulator.
template <DType T, int NX>
void k_dot_nx(const uint8_t* w, const ActBlockQ8* x, int64_t ldx, int64_t in, float* out) {
  constexpr int kBytes = T == DType::kQ2_K   ? 84  // super-block bytes, docs/design/formats.md#gguf-type-ids
                         : T == DType::kQ3_K ? 110
                         : T == DType::kQ4_K ? 144
                         : T == DType::kQ5_K ? 176
                                             : 210;
  __m256 acc[NX];
  for (auto& v : acc) v = _mm256_setzero_ps();
  for (int64_t sb = 0; sb < in / 256; ++sb) {
    KSuper ks;
    k_decode<T>(w + sb * kBytes, ks);
    for (int j = 0; j < NX; ++j)
      acc[j] = _mm256_add_ps(acc[j], k_row_super < T == DType::kQ4_K || T == DType::kQ5_K > (ks, x + j * ldx + 8 * sb));
  }
  for (int j = 0; j < NX; ++j) out[j] = hsum8(acc[j]);
}

template <DType T>
struct KDot {
  template <int NX>
  struct Rows {
    static void run(const uint8_t* w, const ActBlockQ8* x, int64_t ldx, int64_t in, float* out) {
      k_dot_nx<T, NX>(w, x, ldx, in, out);
    }
  };
};

inline void register_qdot_k_simd(QDotKernels& k) {
  k.dot[static_cast<int>(DType::kQ2_K)] = dot_any_nx<KDot<DType::kQ2_K>::Rows>;
  k.dot[static_cast<int>(DType::kQ3_K)] = dot_any_nx<KDot<DType::kQ3_K>::Rows>;
  k.dot[static_cast<int>(DType::kQ4_K)] = dot_any_nx<KDot<DType::kQ4_K>::Rows>;
  k.dot[static_cast<int>(DType::kQ5_K)] = dot_any_nx<KDot<DType::kQ5_K>::Rows>;
  k.dot[static_cast<int>(DType::kQ6_K)] = dot_any_nx<KDot<DType::kQ6_K>::Rows>;
}

}  // namespace
}  // namespace cai::hal::cpu
