// IQ-quant row decoders; the block layouts are described in quant_iq.h. Float operations keep the order given
// there so the results are bit-identical to every other GGUF decoder.
#include "core/quant_iq.h"

#include "core/block_bytes.h"
#include "core/quant_grids.h"

namespace cai::quant_iq {

namespace {

namespace qg = quant_grids;
using block_bytes::load_f16;
using block_bytes::load_u16;
using block_bytes::load_u32;

// 8 elements from 8 unsigned magnitude bytes (element j in byte j), negated where the sign byte has bit j.
void put_signed8(float dl, uint64_t magnitudes, uint8_t signs, float* y) {
  for (int j = 0; j < 8; ++j) {
    float v = dl * static_cast<float>((magnitudes >> (8 * j)) & 0xFF);
    y[j] = (signs >> j) & 1 ? -v : v;
  }
}

// 8 IQ1 elements: grid bytes are int8 −1/0/+1, shifted by delta before scaling.
void put_iq1(float dl, float delta, uint64_t grid, float* y) {
  for (int j = 0; j < 8; ++j) {
    float g = static_cast<float>(static_cast<int8_t>((grid >> (8 * j)) & 0xFF));
    y[j] = dl * (g + delta);
  }
}

// Scale of the IQ2 family: a 4-bit code ls maps to (d·(0.5 + ls))·0.25.
float iq2_scale(float d, int ls) { return d * (0.5f + static_cast<float>(ls)) * 0.25f; }

}  // namespace

void dequantize_iq4_nl(const uint8_t* src, float* dst, int64_t n) {
  for (int64_t b = 0; b < n / 32; ++b, src += 18, dst += 32) {
    float d = load_f16(src);
    const uint8_t* qs = src + 2;
    for (int j = 0; j < 16; ++j) {
      dst[j] = d * static_cast<float>(qg::kIq4nlValues[qs[j] & 15]);
      dst[j + 16] = d * static_cast<float>(qg::kIq4nlValues[qs[j] >> 4]);
    }
  }
}

void dequantize_iq4_xs(const uint8_t* src, float* dst, int64_t n) {
  for (int64_t b = 0; b < n / 256; ++b, src += 136) {
    float d = load_f16(src);
    uint16_t scales_h = load_u16(src + 2);
    const uint8_t* scales_l = src + 4;
    const uint8_t* qs = src + 8;
    for (int s = 0; s < 8; ++s, qs += 16, dst += 32) {
      int ls = ((scales_l[s / 2] >> (4 * (s % 2))) & 15) | (((scales_h >> (2 * s)) & 3) << 4);
      float dl = d * static_cast<float>(ls - 32);
      for (int j = 0; j < 16; ++j) {
        dst[j] = dl * static_cast<float>(qg::kIq4nlValues[qs[j] & 15]);
        dst[j + 16] = dl * static_cast<float>(qg::kIq4nlValues[qs[j] >> 4]);
      }
    }
  }
}

void dequantize_iq2_xxs(const uint8_t* src, float* dst, int64_t n) {
  for (int64_t b = 0; b < n / 256; ++b, src += 66) {
    float d = load_f16(src);
    for (int s = 0; s < 8; ++s) {
      const uint8_t* rec = src + 2 + 8 * s;
      uint32_t w = load_u32(rec + 4);
      float dl = iq2_scale(d, static_cast<int>(w >> 28));
      for (int l = 0; l < 4; ++l, dst += 8)
        put_signed8(dl, qg::kIq2xxs[rec[l]], qg::iq_signs(static_cast<int>((w >> (7 * l)) & 127)), dst);
    }
  }
}

void dequantize_iq2_xs(const uint8_t* src, float* dst, int64_t n) {
  for (int64_t b = 0; b < n / 256; ++b, src += 74) {
    float d = load_f16(src);
    const uint8_t* scales = src + 66;
    for (int s = 0; s < 8; ++s) {
      float dl[2] = {iq2_scale(d, scales[s] & 15), iq2_scale(d, scales[s] >> 4)};
      for (int l = 0; l < 4; ++l, dst += 8) {
        uint16_t q = load_u16(src + 2 + 2 * (4 * s + l));
        put_signed8(dl[l / 2], qg::kIq2xs[q & 511], qg::iq_signs(q >> 9), dst);
      }
    }
  }
}

void dequantize_iq2_s(const uint8_t* src, float* dst, int64_t n) {
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
        put_signed8(dl[l / 2], qg::kIq2s[index], signs[g], dst);
      }
    }
  }
}

void dequantize_iq3_xxs(const uint8_t* src, float* dst, int64_t n) {
  for (int64_t b = 0; b < n / 256; ++b, src += 98) {
    float d = load_f16(src);
    const uint8_t* qs = src + 2;
    for (int s = 0; s < 8; ++s) {
      uint32_t w = load_u32(src + 66 + 4 * s);
      float dl = d * (0.5f + static_cast<float>(w >> 28)) * 0.5f;
      for (int l = 0; l < 4; ++l, dst += 8) {
        const uint8_t* idx = qs + 8 * s + 2 * l;
        uint64_t mags = qg::kIq3xxs[idx[0]] | (static_cast<uint64_t>(qg::kIq3xxs[idx[1]]) << 32);
        put_signed8(dl, mags, qg::iq_signs(static_cast<int>((w >> (7 * l)) & 127)), dst);
      }
    }
  }
}

void dequantize_iq3_s(const uint8_t* src, float* dst, int64_t n) {
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
        put_signed8(dl, mags, signs[4 * s + l], dst);
      }
    }
  }
}

void dequantize_iq1_s(const uint8_t* src, float* dst, int64_t n) {
  for (int64_t b = 0; b < n / 256; ++b, src += 50) {
    float d = load_f16(src);
    const uint8_t* qs = src + 2;
    for (int s = 0; s < 8; ++s) {
      uint16_t h = load_u16(src + 34 + 2 * s);
      float dl = d * static_cast<float>(2 * ((h >> 12) & 7) + 1);
      float delta = (h & 0x8000) ? -qg::kIq1Delta : qg::kIq1Delta;
      for (int l = 0; l < 4; ++l, dst += 8) {
        int index = qs[4 * s + l] | (((h >> (3 * l)) & 7) << 8);
        put_iq1(dl, delta, qg::kIq1s[index], dst);
      }
    }
  }
}

void dequantize_iq1_m(const uint8_t* src, float* dst, int64_t n) {
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
        put_iq1(dl[l / 2], delta, qg::kIq1s[qs[g] | ((nib & 7) << 8)], dst);
      }
    }
  }
}

}  // namespace cai::quant_iq
