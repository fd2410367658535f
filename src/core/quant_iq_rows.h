// The row decoders of the IQ1..IQ3 grid types (layouts in quant_iq.h) as templates over how 8 decoded elements are
// written: Put::signed8(dl, magnitudes, signs, y) (8 magnitude bytes times dl, negated where the sign byte has bit j)
// and Put::iq1(dl, delta, grid, y) (dl · (grid byte + delta)). core/quant_iq.cpp instantiates them with scalar puts,
// the NEON GEMM table (hal/cpu/kernels/gemm_neon.cpp) with vector ones; both give the same bits, as the block loops and
// their float scales are these.
#pragma once

#include <cstdint>

#include "core/block_bytes.h"
#include "core/quant_grids.h"

namespace cai::quant_iq {

namespace grid_rows {

// Scale of the IQ2 family: a 4-bit code ls maps to (d·(0.5 + ls))·0.25.
inline float iq2_scale(float d, int ls) { return d * (0.5f + static_cast<float>(ls)) * 0.25f; }

namespace qg = quant_grids;
using block_bytes::load_f16;
using block_bytes::load_u16;
using block_bytes::load_u32;

template <class Put>
void iq2_xxs_rows(const uint8_t* src, float* dst, int64_t n) {
  for (int64_t b = 0; b < n / 256; ++b, src += 66) {
    float d = load_f16(src);
    for (int s = 0; s < 8; ++s) {
      const uint8_t* rec = src + 2 + 8 * s;
      uint32_t w = load_u32(rec + 4);
      float dl = iq2_scale(d, static_cast<int>(w >> 28));
      for (int l = 0; l < 4; ++l, dst += 8)
        Put::signed8(dl, qg::kIq2xxs[rec[l]], qg::iq_signs(static_cast<int>((w >> (7 * l)) & 127)), dst);
    }
  }
}

template <class Put>
void iq2_xs_rows(const uint8_t* src, float* dst, int64_t n) {
  for (int64_t b = 0; b < n / 256; ++b, src += 74) {
    float d = load_f16(src);
    const uint8_t* scales = src + 66;
    for (int s = 0; s < 8; ++s) {
      float dl[2] = {iq2_scale(d, scales[s] & 15), iq2_scale(d, scales[s] >> 4)};
      for (int l = 0; l < 4; ++l, dst += 8) {
        uint16_t q = load_u16(src + 2 + 2 * (4 * s + l));
        Put::signed8(dl[l / 2], qg::kIq2xs[q & 511], qg::iq_signs(q >> 9), dst);
      }
    }
  }
}

template <class Put>
void iq2_s_rows(const uint8_t* src, float* dst, int64_t n) {
  for (int64_t b = 0; b < n / 256; ++b, src += 82) {
    float d = load_f16(src);
    const uint8_t* qs = src + 2;
    const uint8_t* signs = src + 34;
    const uint8_t* qh = src + 66;
    const uint8_t* scales = src + 74;
    for (int s = 0; s < 8; ++s) {
      float dl[2] = {iq2_scale(d, scales[s] & 15), iq2_scale(d, scales[s] >> 4)};
      for (int l = 0; l < 4; ++l, dst += 8) {
        int g = 4 * s + l;
        int index = qs[g] | (((qh[s] >> (2 * l)) & 3) << 8);
        Put::signed8(dl[l / 2], qg::kIq2s[index], signs[g], dst);
      }
    }
  }
}

template <class Put>
void iq3_xxs_rows(const uint8_t* src, float* dst, int64_t n) {
  for (int64_t b = 0; b < n / 256; ++b, src += 98) {
    float d = load_f16(src);
    const uint8_t* qs = src + 2;
    for (int s = 0; s < 8; ++s) {
      uint32_t w = load_u32(src + 66 + 4 * s);
      float dl = d * (0.5f + static_cast<float>(w >> 28)) * 0.5f;
      for (int l = 0; l < 4; ++l, dst += 8) {
        const uint8_t* idx = qs + 8 * s + 2 * l;
        uint64_t mags = qg::kIq3xxs[idx[0]] | (static_cast<uint64_t>(qg::kIq3xxs[idx[1]]) << 32);
        Put::signed8(dl, mags, qg::iq_signs(static_cast<int>((w >> (7 * l)) & 127)), dst);
      }
    }
  }
}

template <class Put>
void iq3_s_rows(const uint8_t* src, float* dst, int64_t n) {
  for (int64_t b = 0; b < n / 256; ++b, src += 110) {
    float d = load_f16(src);
    const uint8_t* qs = src + 2;
    const uint8_t* qh = src + 66;
    const uint8_t* signs = src + 74;
    const uint8_t* scales = src + 106;
    for (int s = 0; s < 8; ++s) {
      int nibble = (scales[s / 2] >> (4 * (s % 2))) & 15;
      float dl = d * static_cast<float>(1 + 2 * nibble);
      for (int l = 0; l < 4; ++l, dst += 8) {
        int k = 2 * l;
        int i0 = qs[8 * s + k] | (((qh[s] >> k) & 1) << 8);
        int i1 = qs[8 * s + k + 1] | (((qh[s] >> (k + 1)) & 1) << 8);
        uint64_t mags = qg::kIq3s[i0] | (static_cast<uint64_t>(qg::kIq3s[i1]) << 32);
        Put::signed8(dl, mags, signs[4 * s + l], dst);
      }
    }
  }
}

template <class Put>
void iq1_s_rows(const uint8_t* src, float* dst, int64_t n) {
  for (int64_t b = 0; b < n / 256; ++b, src += 50) {
    float d = load_f16(src);
    const uint8_t* qs = src + 2;
    for (int s = 0; s < 8; ++s) {
      uint16_t h = load_u16(src + 34 + 2 * s);
      float dl = d * static_cast<float>(2 * ((h >> 12) & 7) + 1);
      float delta = (h & 0x8000) ? -qg::kIq1Delta : qg::kIq1Delta;
      for (int l = 0; l < 4; ++l, dst += 8) {
        int index = qs[4 * s + l] | (((h >> (3 * l)) & 7) << 8);
        Put::iq1(dl, delta, qg::kIq1s[index], dst);
      }
    }
  }
}

template <class Put>
void iq1_m_rows(const uint8_t* src, float* dst, int64_t n) {
  for (int64_t b = 0; b < n / 256; ++b, src += 56) {
    const uint8_t* qs = src;
    const uint8_t* qh = src + 32;
    uint16_t sc[4];
    for (int k = 0; k < 4; ++k) sc[k] = load_u16(src + 48 + 2 * k);
    uint16_t d_bits = 0;
    for (int k = 0; k < 4; ++k) d_bits = static_cast<uint16_t>(d_bits | ((sc[k] >> 12) << (4 * k)));
    float d = f16_to_f32(d_bits);
    for (int s = 0; s < 8; ++s) {
      int shift = 6 * (s % 2);
      float dl[2] = {d * static_cast<float>(2 * ((sc[s / 2] >> shift) & 7) + 1),
                     d * static_cast<float>(2 * ((sc[s / 2] >> (shift + 3)) & 7) + 1)};
      for (int l = 0; l < 4; ++l, dst += 8) {
        int g = 4 * s + l;
        int nib = (qh[g / 2] >> (4 * (g % 2))) & 15;
        float delta = (nib & 8) ? -qg::kIq1Delta : qg::kIq1Delta;
        Put::iq1(dl[l / 2], delta, qg::kIq1s[qs[g] | ((nib & 7) << 8)], dst);
      }
    }
  }
}

}  // namespace grid_rows

}  // namespace cai::quant_iq
