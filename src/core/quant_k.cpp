// K-quant codecs: Q2_K–Q6_K dequantizers (bit-exact, docs/design/formats.md#k-quants) and simple Q4_K–Q6_K reference
// quantizers.
#include "core/quant_k.h"

#include <algorithm>
#include <cmath>

#include "core/block_bytes.h"

namespace cai::quant_k {

namespace {

using block_bytes::load_f16;

uint16_t store_f16(uint8_t* p, float f) {
  uint16_t v = f32_to_f16(f);
  block_bytes::store_u16(p, v);
  return v;
}

int round_clamp(float v, int lo, int hi) { return std::clamp(static_cast<int>(std::lround(v)), lo, hi); }

// Q4_K / Q5_K share everything except the 5th bit: `qh` is null for Q4_K.
void dequantize_4or5(const uint8_t* d_ptr, const uint8_t* qh, const uint8_t* qs, float* dst) {
  float d = load_f16(d_ptr), dmin = load_f16(d_ptr + 2);
  const uint8_t* scales = d_ptr + 4;
  for (int c = 0; c < 4; ++c) {
    int sc0, m0, sc1, m1;
    scale_min(scales, 2 * c, &sc0, &m0);
    scale_min(scales, 2 * c + 1, &sc1, &m1);
    float d0 = d * static_cast<float>(sc0), min0 = dmin * static_cast<float>(m0);
    float d1 = d * static_cast<float>(sc1), min1 = dmin * static_cast<float>(m1);
    for (int l = 0; l < 32; ++l) {
      int q0 = qs[32 * c + l] & 15, q1 = qs[32 * c + l] >> 4;
      if (qh) {
        q0 += ((qh[l] >> (2 * c)) & 1) << 4;
        q1 += ((qh[l] >> (2 * c + 1)) & 1) << 4;
      }
      dst[64 * c + l] = d0 * static_cast<float>(q0) - min0;
      dst[64 * c + 32 + l] = d1 * static_cast<float>(q1) - min1;
    }
  }
}

// Picks 8 sub-block (scale, min) pairs for `levels` + 1 codes, writes d, dmin, the packed scales and the codes q[256].
void quantize_4or5_block(const float* x, uint8_t* d_ptr, int levels, int* q) {
  float scale[8], minv[8];
  for (int s = 0; s < 8; ++s) {
    float lo = 0.0f, hi = x[32 * s];
    for (int l = 0; l < 32; ++l) {
      lo = std::min(lo, x[32 * s + l]);
      hi = std::max(hi, x[32 * s + l]);
    }
    scale[s] = (hi - lo) / static_cast<float>(levels);
    minv[s] = -lo;
  }
  float max_scale = *std::max_element(scale, scale + 8), max_min = *std::max_element(minv, minv + 8);
  float d = f16_to_f32(store_f16(d_ptr, max_scale / 63.0f));
  float dmin = f16_to_f32(store_f16(d_ptr + 2, max_min / 63.0f));
  int sc[8], m[8];
  for (int s = 0; s < 8; ++s) {
    sc[s] = d > 0.0f ? round_clamp(scale[s] / d, 0, 63) : 0;
    m[s] = dmin > 0.0f ? round_clamp(minv[s] / dmin, 0, 63) : 0;
  }
  uint8_t* b = d_ptr + 4;
  for (int s = 0; s < 4; ++s) {
    b[s] = static_cast<uint8_t>((sc[s] & 63) | ((sc[s + 4] >> 4) << 6));
    b[s + 4] = static_cast<uint8_t>((m[s] & 63) | ((m[s + 4] >> 4) << 6));
    b[s + 8] = static_cast<uint8_t>((sc[s + 4] & 15) | ((m[s + 4] & 15) << 4));
  }
  for (int s = 0; s < 8; ++s) {
    float step = d * static_cast<float>(sc[s]), offset = dmin * static_cast<float>(m[s]);
    for (int l = 0; l < 32; ++l)
      q[32 * s + l] = step > 0.0f ? round_clamp((x[32 * s + l] + offset) / step, 0, levels) : 0;
  }
}

// Q2_K and Q3_K share the 2-bit layout: element n sits in qs[32h + 16p + l] at bits 2j (h, j, p, l as in
// docs/design/formats.md#k-quants), i.e. each 32-byte run of qs serves 128 elements, four 2-bit planes of 32.
int q2_bits(const uint8_t* qs, int n) {
  int h = n / 128, r = n % 128, j = r / 32, p = (r % 32) / 16, l = r % 16;
  return (qs[32 * h + 16 * p + l] >> (2 * j)) & 3;
}

}  // namespace

void dequantize_q2_k(const uint8_t* src, float* dst, int64_t n) {
  for (int64_t b = 0; b < n / 256; ++b, src += 84, dst += 256) {
    const uint8_t* scales = src;
    const uint8_t* qs = src + 16;
    float d = load_f16(src + 80), dmin = load_f16(src + 82);
    for (int i = 0; i < 256; ++i) {
      uint8_t sc = scales[i / 16];
      float dl = d * static_cast<float>(sc & 15), ml = dmin * static_cast<float>(sc >> 4);
      dst[i] = dl * static_cast<float>(q2_bits(qs, i)) - ml;
    }
  }
}

void dequantize_q3_k(const uint8_t* src, float* dst, int64_t n) {
  for (int64_t b = 0; b < n / 256; ++b, src += 110, dst += 256) {
    const uint8_t* hmask = src;
    const uint8_t* qs = src + 32;
    const uint8_t* scales = src + 96;
    float d = load_f16(src + 108);
    for (int i = 0; i < 256; ++i) {
      int r = i % 128;
      int hbit = (hmask[r % 32] >> (4 * (i / 128) + r / 32)) & 1;  // hmask[16p + l], bit 4h + j
      float dl = d * static_cast<float>(q3_k_scale(scales, i / 16));
      dst[i] = dl * static_cast<float>(q2_bits(qs, i) - (hbit ? 0 : 4));
    }
  }
}

void dequantize_q4_k(const uint8_t* src, float* dst, int64_t n) {
  for (int64_t b = 0; b < n / 256; ++b, src += 144, dst += 256) dequantize_4or5(src, nullptr, src + 16, dst);
}

void dequantize_q5_k(const uint8_t* src, float* dst, int64_t n) {
  for (int64_t b = 0; b < n / 256; ++b, src += 176, dst += 256) dequantize_4or5(src, src + 16, src + 48, dst);
}

void dequantize_q6_k(const uint8_t* src, float* dst, int64_t n) {
  for (int64_t b = 0; b < n / 256; ++b, src += 210, dst += 256) {
    const uint8_t* ql = src;
    const uint8_t* qh = src + 128;
    const int8_t* scales = reinterpret_cast<const int8_t*>(src + 192);
    float d = load_f16(src + 208);
    for (int i = 0; i < 256; ++i) {
      int h = i / 128, r = i % 128, g = r / 32, l = r % 32;
      uint8_t lbyte = ql[64 * h + l + 32 * (g & 1)];
      int low = g < 2 ? (lbyte & 15) : (lbyte >> 4);
      int high = (qh[32 * h + l] >> (2 * g)) & 3;
      int q = low | (high << 4);
      dst[i] = d * static_cast<float>(scales[i / 16]) * static_cast<float>(q - 32);
    }
  }
}

void quantize_q4_k(const float* src, uint8_t* dst, int64_t n) {
  int q[256];
  for (int64_t b = 0; b < n / 256; ++b, src += 256, dst += 144) {
    quantize_4or5_block(src, dst, 15, q);
    uint8_t* qs = dst + 16;
    for (int c = 0; c < 4; ++c)
      for (int l = 0; l < 32; ++l) qs[32 * c + l] = static_cast<uint8_t>(q[64 * c + l] | (q[64 * c + 32 + l] << 4));
  }
}

void quantize_q5_k(const float* src, uint8_t* dst, int64_t n) {
  int q[256];
  for (int64_t b = 0; b < n / 256; ++b, src += 256, dst += 176) {
    quantize_4or5_block(src, dst, 31, q);
    uint8_t* qh = dst + 16;
    uint8_t* qs = dst + 48;
    std::memset(qh, 0, 32);
    for (int c = 0; c < 4; ++c) {
      for (int l = 0; l < 32; ++l) {
        int q0 = q[64 * c + l], q1 = q[64 * c + 32 + l];
        qs[32 * c + l] = static_cast<uint8_t>((q0 & 15) | ((q1 & 15) << 4));
        qh[l] = static_cast<uint8_t>(qh[l] | ((q0 >> 4) << (2 * c)) | ((q1 >> 4) << (2 * c + 1)));
      }
    }
  }
}

void quantize_q6_k(const float* src, uint8_t* dst, int64_t n) {
  for (int64_t b = 0; b < n / 256; ++b, src += 256, dst += 210) {
    float scale[16];  // per 16 elements: the extreme signed value maps to code -32
    for (int j = 0; j < 16; ++j) {
      float extreme = 0.0f;
      for (int l = 0; l < 16; ++l)
        if (std::fabs(src[16 * j + l]) > std::fabs(extreme)) extreme = src[16 * j + l];
      scale[j] = extreme / -32.0f;
    }
    float max_abs = 0.0f;
    for (float s : scale) max_abs = std::max(max_abs, std::fabs(s));
    float d = f16_to_f32(store_f16(dst + 208, max_abs / 127.0f));
    int8_t* scales = reinterpret_cast<int8_t*>(dst + 192);
    uint8_t* ql = dst;
    uint8_t* qh = dst + 128;
    std::memset(dst, 0, 192);
    for (int j = 0; j < 16; ++j) scales[j] = static_cast<int8_t>(d > 0.0f ? round_clamp(scale[j] / d, -128, 127) : 0);
    for (int i = 0; i < 256; ++i) {
      float step = d * static_cast<float>(scales[i / 16]);
      int q = (step != 0.0f ? round_clamp(src[i] / step, -32, 31) : 0) + 32;
      int h = i / 128, r = i % 128, g = r / 32, l = r % 32;
      uint8_t& lbyte = ql[64 * h + l + 32 * (g & 1)];
      lbyte = static_cast<uint8_t>(lbyte | ((q & 15) << (g < 2 ? 0 : 4)));
      qh[32 * h + l] = static_cast<uint8_t>(qh[32 * h + l] | ((q >> 4) << (2 * g)));
    }
  }
}

}  // namespace cai::quant_k
