// The loops of MlaBf16Kernels (mla_bf16.h) that every ISA shares, around the ISA's tiles. Tile
// (mla_bf16_avx512bf16.cpp, mla_bf16_bfdot.cpp) has:
// - to_bf16(x, n, out): n floats as BF16 (nearest even);
// - dot_tile<QN, RN>(q, ldq, r, n, out, ldo): QN queries × RN rows (BF16, rows at r + t·n);
// - interleave_pairs(rows, ldr, nt, n, buf): each position pair's two rows as BF16, element by element (the last
//   pair's second row zero when nt is odd);
// - pair_word(x, y): two floats as one 32-bit word of two BF16, x in the low half;
// - axpy_outputs<M>(w, np, pairs, n, y, ldy): M outputs' n columns over np position pairs, pair k of output i the word
//   w[i·np + k].
// Each output's sums run in one order whatever the number of queries or outputs. Internal linkage.
#pragma once

#include <algorithm>
#include <cstdint>

#include "hal/cpu/kernels/mla_bf16.h"

namespace cai::hal::cpu {
namespace {

template <class Tile>
struct MlaBf16Tiles {
  static constexpr int kMaxPairs = 64;  // position pairs a call takes at once (the op's blocks hold 16 positions)

  template <int QN>
  static void dot_queries(const uint16_t* q, int64_t ldq, const uint16_t* r, int nt, int64_t n, float* out,
                          int64_t ldo) {
    int t = 0;
    for (; t + 4 <= nt; t += 4) Tile::template dot_tile<QN, 4>(q, ldq, r + t * n, n, out + t, ldo);
    for (; t < nt; ++t) Tile::template dot_tile<QN, 1>(q, ldq, r + t * n, n, out + t, ldo);
  }

  static void dot_rows(const uint16_t* q, int64_t ldq, int nq, const float* rows, int64_t ldr, int nt, int64_t n,
                       float* out, int64_t ldo, uint16_t* buf) {
    for (int t = 0; t < nt; ++t) Tile::to_bf16(rows + t * ldr, n, buf + t * n);
    int i = 0;
    for (; i + 4 <= nq; i += 4) dot_queries<4>(q + i * ldq, ldq, buf, nt, n, out + i * ldo, ldo);
    for (; i < nq; ++i) dot_queries<1>(q + i * ldq, ldq, buf, nt, n, out + i * ldo, ldo);
  }

  static void axpy_rows(const float* a, int64_t lda, int ny, const float* rows, int64_t ldr, int nt, int64_t n,
                        float* y, int64_t ldy, uint16_t* buf) {
    Tile::interleave_pairs(rows, ldr, nt, n, buf);
    const int np = (nt + 1) / 2;
    for (int i0 = 0; i0 < ny; i0 += 4) {
      const int m = std::min(4, ny - i0);
      for (int k0 = 0; k0 < np; k0 += kMaxPairs) {
        const int kn = std::min(kMaxPairs, np - k0);
        uint32_t w[4 * kMaxPairs];
        for (int i = 0; i < m; ++i)
          for (int k = 0; k < kn; ++k) {
            const int t = 2 * (k0 + k);
            w[i * kn + k] = Tile::pair_word(a[(i0 + i) * lda + t], t + 1 < nt ? a[(i0 + i) * lda + t + 1] : 0.0f);
          }
        const uint16_t* pairs = buf + static_cast<int64_t>(k0) * n * 2;
        float* yi = y + i0 * ldy;
        switch (m) {
          case 4: Tile::template axpy_outputs<4>(w, kn, pairs, n, yi, ldy); break;
          case 3: Tile::template axpy_outputs<3>(w, kn, pairs, n, yi, ldy); break;
          case 2: Tile::template axpy_outputs<2>(w, kn, pairs, n, yi, ldy); break;
          default: Tile::template axpy_outputs<1>(w, kn, pairs, n, yi, ldy); break;
        }
      }
    }
  }

  static const MlaBf16Kernels& table() {
    static const MlaBf16Kernels kernels{&Tile::to_bf16, &dot_rows, &axpy_rows};
    return kernels;
  }
};

}  // namespace
}  // namespace cai::hal::cpu
