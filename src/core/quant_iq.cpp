// IQ-quant row decoders; the block layouts are described in quant_iq.h. Float operations keep the order given
// there so the results are bit-identical to every other GGUF decoder.
#include "core/quant_iq.h"

#include "core/block_bytes.h"
#include "core/quant_grids.h"
#include "core/quant_iq_rows.h"

namespace cai::quant_iq {

namespace {

namespace qg = quant_grids;
using block_bytes::load_f16;
using block_bytes::load_u16;

// The scalar puts of quant_iq_rows.h.
struct ScalarPut {
  // 8 elements from 8 unsigned magnitude bytes (element j in byte j), negated where the sign byte has bit j.
  static void signed8(float dl, uint64_t magnitudes, uint8_t signs, float* y) {
    for (int j = 0; j < 8; ++j) {
      float v = dl * static_cast<float>((magnitudes >> (8 * j)) & 0xFF);
      y[j] = (signs >> j) & 1 ? -v : v;
    }
  }
  // 8 IQ1 elements: grid bytes are int8 −1/0/+1, shifted by delta before scaling.
  static void iq1(float dl, float delta, uint64_t grid, float* y) {
    for (int j = 0; j < 8; ++j) {
      float g = static_cast<float>(static_cast<int8_t>((grid >> (8 * j)) & 0xFF));
      y[j] = dl * (g + delta);
    }
  }
};

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

void dequantize_iq2_xxs(const uint8_t* src, float* dst, int64_t n) { grid_rows::iq2_xxs_rows<ScalarPut>(src, dst, n); }

void dequantize_iq2_xs(const uint8_t* src, float* dst, int64_t n) { grid_rows::iq2_xs_rows<ScalarPut>(src, dst, n); }

void dequantize_iq2_s(const uint8_t* src, float* dst, int64_t n) { grid_rows::iq2_s_rows<ScalarPut>(src, dst, n); }

void dequantize_iq3_xxs(const uint8_t* src, float* dst, int64_t n) { grid_rows::iq3_xxs_rows<ScalarPut>(src, dst, n); }

void dequantize_iq3_s(const uint8_t* src, float* dst, int64_t n) { grid_rows::iq3_s_rows<ScalarPut>(src, dst, n); }

void dequantize_iq1_s(const uint8_t* src, float* dst, int64_t n) { grid_rows::iq1_s_rows<ScalarPut>(src, dst, n); }

void dequantize_iq1_m(const uint8_t* src, float* dst, int64_t n) { grid_rows::iq1_m_rows<ScalarPut>(src, dst, n); }

}  // namespace cai::quant_iq
