// RowLanes and B16 for x86-64: the vector operations the group kernels of qdot_groups_simd.h are written against,
// one 512-bit vector of 16 rows where the including file is compiled with AVX-512 VNNI, two 256-bit halves of 8 rows
// otherwise. Included by qdot_groups_simd.h after qdot_avx2.h; internal linkage.
#pragma once

#include <immintrin.h>

#include "core/block_bytes.h"

namespace cai::hal::cpu {
namespace {

using block_bytes::load_i32;

// The rows of a group one vector holds, and the operations the group kernels need on them. A field of U bytes per
// row (qdot_groups.h) gives the vector's rows from p + (first row) · U on.
#if defined(__AVX512VNNI__) && defined(__AVX512BW__)
struct RowLanes {
  static constexpr int kRows = 16;
  static constexpr bool kPairs = true;  // two groups at a time (the pair kernels)
  using I = __m512i;
  using F = __m512;
  static I zero() { return _mm512_setzero_si512(); }
  static F fzero() { return _mm512_setzero_ps(); }
  static I quads(const uint8_t* p) { return _mm512_loadu_si512(p); }  // 4 bytes per row
  static I pairs_i16(const uint8_t* p) {                              // 2 int8 per row, widened to int16
    return _mm512_cvtepi8_epi16(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(p)));
  }
  static I bytes_i8(const uint8_t* p) {
    return _mm512_cvtepi8_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p)));
  }
  static I bytes_u8(const uint8_t* p) {
    return _mm512_cvtepu8_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p)));
  }
  static F f16(const uint8_t* p) { return _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(p))); }
  static I set1(int32_t v) { return _mm512_set1_epi32(v); }
  static F fset1(float v) { return _mm512_set1_ps(v); }
  static F fload(const float* p) { return _mm512_loadu_ps(p); }
  static I and8(I v, int m) { return _mm512_and_si512(v, _mm512_set1_epi8(static_cast<char>(m))); }
  static I high_nibbles(I v) { return and8(srl16<4>(v), 0x0F); }
  static I or_(I a, I b) { return _mm512_or_si512(a, b); }
  template <int N>
  static I srl16(I v) {
    return _mm512_srli_epi16(v, N);
  }
  template <int N>
  static I sll16(I v) {
    return _mm512_slli_epi16(v, N);
  }
  static I srl16(I v, int n) { return _mm512_srl_epi16(v, _mm_cvtsi32_si128(n)); }
  static I sll16(I v, int n) { return _mm512_sll_epi16(v, _mm_cvtsi32_si128(n)); }
  static I add(I a, I b) { return _mm512_add_epi32(a, b); }
  static I sub(I a, I b) { return _mm512_sub_epi32(a, b); }
  static I mullo(I a, I b) { return _mm512_mullo_epi32(a, b); }
  static I dot_u8s8(I acc, I u, I s) { return _mm512_dpbusd_epi32(acc, u, s); }
  // The same with s the 4 bytes (2 int16) at p in every lane, broadcast from the instruction's memory operand
  // ({1to16}): from intrinsics GCC emits a separate vpbroadcastd load, one more micro-op per product, and with several
  // activation rows the front end then sets the pace (`gemm/q4_k_r16/1536x1536/n16/t1`: two calls of the 8-row
  // kernel). Where one broadcast feeds two groups (the pair kernels) the register form stays ahead.
  static I dot_u8s8_at(I acc, I u, const int8_t* p) {
    asm("vpdpbusd %2%{1to16%}, %1, %0" : "+v"(acc) : "v"(u), "m"(*reinterpret_cast<const int32_t*>(p)));
    return acc;
  }
  static I dot_s16_at(I acc, I w, const int16_t* p) {
    asm("vpdpwssd %2%{1to16%}, %1, %0" : "+v"(acc) : "v"(w), "m"(*reinterpret_cast<const int32_t*>(p)));
    return acc;
  }
  // The int16 pair products add straight into one int32 per row (row_lanes_neon.h defers that).
  using PairSums = I;
  static constexpr int kPairSumRows = 8;
  static I pair_total(I s) { return s; }
  // Table levels (IQ4): 16 bytes in every 128-bit lane, byte i of each picked by the low nibble of an index byte. With
  // vpdpbusd the levels are unsigned: level + 128, whose extra 128 · Σ a.q the sums start without.
  static constexpr int kLevelBias = 128;
  static I table16(const uint8_t* t) {
    return _mm512_broadcast_i32x4(_mm_loadu_si128(reinterpret_cast<const __m128i*>(t)));
  }
  static I lookup(I table, I index) { return _mm512_shuffle_epi8(table, index); }
  static I signed_level(I codes) { return _mm512_xor_si512(codes, _mm512_set1_epi8(static_cast<char>(0x80))); }
  static I dot_level(I acc, I level, I x) { return dot_u8s8(acc, level, x); }
  static I dot_level_at(I acc, I level, const int8_t* p) { return dot_u8s8_at(acc, level, p); }
  static F cvt(I v) { return _mm512_cvtepi32_ps(v); }
  static F mul(F a, F b) { return _mm512_mul_ps(a, b); }
  static F fma(F a, F b, F c) { return _mm512_fmadd_ps(a, b, c); }
  static void store(float* p, F v) { _mm512_storeu_ps(p, v); }
};
#else
struct RowLanes {
  static constexpr int kRows = 8;
  static constexpr bool kPairs = false;  // two groups' 8-row halves would run out of registers
  using I = __m256i;
  using F = __m256;
  static I zero() { return _mm256_setzero_si256(); }
  static F fzero() { return _mm256_setzero_ps(); }
  static I quads(const uint8_t* p) { return _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p)); }
  static I pairs_i16(const uint8_t* p) {
    return _mm256_cvtepi8_epi16(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p)));
  }
  static I bytes_i8(const uint8_t* p) {
    return _mm256_cvtepi8_epi32(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(p)));
  }
  static I bytes_u8(const uint8_t* p) {
    return _mm256_cvtepu8_epi32(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(p)));
  }
  static F f16(const uint8_t* p) { return _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p))); }
  static I set1(int32_t v) { return _mm256_set1_epi32(v); }
  static F fset1(float v) { return _mm256_set1_ps(v); }
  static F fload(const float* p) { return _mm256_loadu_ps(p); }
  static I and8(I v, int m) { return _mm256_and_si256(v, _mm256_set1_epi8(static_cast<char>(m))); }
  static I high_nibbles(I v) { return and8(srl16<4>(v), 0x0F); }
  static I or_(I a, I b) { return _mm256_or_si256(a, b); }
  template <int N>
  static I srl16(I v) {
    return _mm256_srli_epi16(v, N);
  }
  template <int N>
  static I sll16(I v) {
    return _mm256_slli_epi16(v, N);
  }
  static I srl16(I v, int n) { return _mm256_srl_epi16(v, _mm_cvtsi32_si128(n)); }
  static I sll16(I v, int n) { return _mm256_sll_epi16(v, _mm_cvtsi32_si128(n)); }
  static I add(I a, I b) { return _mm256_add_epi32(a, b); }
  static I sub(I a, I b) { return _mm256_sub_epi32(a, b); }
  static I mullo(I a, I b) { return _mm256_mullo_epi32(a, b); }
  static I dot_u8s8(I acc, I u, I s) { return _mm256_add_epi32(acc, cpu::dot_u8s8(u, s)); }
  static I dot_s16(I acc, I w, I x) { return _mm256_add_epi32(acc, _mm256_madd_epi16(w, x)); }
  static I dot_u8s8_at(I acc, I u, const int8_t* p) { return dot_u8s8(acc, u, set1(load_i32(p))); }
  static I dot_s16_at(I acc, I w, const int16_t* p) { return dot_s16(acc, w, set1(load_i32(p))); }
  // The int16 pair products add straight into one int32 per row (row_lanes_neon.h defers that).
  using PairSums = I;
  static constexpr int kPairSumRows = 8;
  static I pair_total(I s) { return s; }
  // Table levels (IQ4) stay signed here: vpmaddubsw would saturate on levels + 128, so |level| meets a.q with the
  // level's sign (cpu::dot_s8s8).
  static constexpr int kLevelBias = 0;
  static I table16(const uint8_t* t) {
    return _mm256_broadcastsi128_si256(_mm_loadu_si128(reinterpret_cast<const __m128i*>(t)));
  }
  static I lookup(I table, I index) { return _mm256_shuffle_epi8(table, index); }
  static I signed_level(I codes) { return codes; }
  static I dot_level(I acc, I level, I x) { return _mm256_add_epi32(acc, cpu::dot_s8s8(level, x)); }
  static I dot_level_at(I acc, I level, const int8_t* p) { return dot_level(acc, level, set1(load_i32(p))); }
  static F cvt(I v) { return _mm256_cvtepi32_ps(v); }
  static F mul(F a, F b) { return _mm256_mul_ps(a, b); }
  static F fma(F a, F b, F c) { return _mm256_fmadd_ps(a, b, c); }
  static void store(float* p, F v) { _mm256_storeu_ps(p, v); }
};
#endif

// 16 bytes (one per row of a group), for unpacking the K-quant scales of a group: shifts move 16-bit lanes, as every
// caller masks the bits it keeps within their byte.
struct B16 {
  using V = __m128i;
  static V load(const uint8_t* p) { return _mm_loadu_si128(reinterpret_cast<const __m128i*>(p)); }
  static void store(void* p, V v) { _mm_storeu_si128(reinterpret_cast<__m128i*>(p), v); }
  static V and8(V v, int m) { return _mm_and_si128(v, _mm_set1_epi8(static_cast<char>(m))); }
  static V and16(V v, int m) { return _mm_and_si128(v, _mm_set1_epi16(static_cast<int16_t>(m))); }
  static V or_(V a, V b) { return _mm_or_si128(a, b); }
  static V sub8(V v, int c) { return _mm_sub_epi8(v, _mm_set1_epi8(static_cast<char>(c))); }
  template <int N>
  static V srl16(V v) {
    return _mm_srli_epi16(v, N);
  }
  template <int N>
  static V sll16(V v) {
    return _mm_slli_epi16(v, N);
  }
  static V srl16(V v, int n) { return _mm_srl_epi16(v, _mm_cvtsi32_si128(n)); }
  // The low bytes of two vectors of 16-bit lanes (each at most 255), a's then b's.
  static V narrow16(V a, V b) { return _mm_packus_epi16(a, b); }
};

[[gnu::always_inline]] inline void prefetch_line(const uint8_t* p) {
  _mm_prefetch(reinterpret_cast<const char*>(p), _MM_HINT_T0);
}

}  // namespace
}  // namespace cai::hal::cpu
