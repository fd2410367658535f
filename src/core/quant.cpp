// Row dequantize/quantize dispatch plus the plain-float, 32-element-block and FP8 codecs
// (docs/design/formats.md#quant-block-layouts, docs/design/formats.md#fp8-e4m3-and-deepseek-block-scales); the K-quants
// live in quant_k.cpp, the IQ-quants in quant_iq.cpp.
#include "core/quant.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <cstring>

#include "core/block_bytes.h"
#include "core/quant_iq.h"
#include "core/quant_k.h"

namespace cai {

namespace {

using block_bytes::load_u16;
using block_bytes::load_u32;
using block_bytes::store_u16;

void dequantize_q8_0(const uint8_t* src, float* dst, int64_t n) {
  for (int64_t b = 0; b < n / 32; ++b, src += 34, dst += 32) {
    float d = f16_to_f32(load_u16(src));
    const int8_t* qs = reinterpret_cast<const int8_t*>(src + 2);
    for (int k = 0; k < 32; ++k) dst[k] = d * static_cast<float>(qs[k]);
  }
}

void dequantize_q4_0(const uint8_t* src, float* dst, int64_t n) {
  for (int64_t b = 0; b < n / 32; ++b, src += 18, dst += 32) {
    float d = f16_to_f32(load_u16(src));
    const uint8_t* qs = src + 2;
    for (int j = 0; j < 16; ++j) {
      dst[j] = d * static_cast<float>((qs[j] & 15) - 8);
      dst[j + 16] = d * static_cast<float>((qs[j] >> 4) - 8);
    }
  }
}

// Q4_1 / Q5_1 (m != null: x = d·q + m) and Q5_0 (m null: x = d·(q − 16)); qh null for the 4-bit type.
void dequantize_32_block(float d, const float* m, const uint8_t* qh_ptr, const uint8_t* qs, float* dst) {
  uint32_t qh = qh_ptr ? load_u32(qh_ptr) : 0;
  for (int j = 0; j < 16; ++j) {
    int q0 = (qs[j] & 15) | static_cast<int>(((qh >> j) & 1) << 4);
    int q1 = (qs[j] >> 4) | static_cast<int>(((qh >> (j + 16)) & 1) << 4);
    if (m) {
      dst[j] = d * static_cast<float>(q0) + *m;
      dst[j + 16] = d * static_cast<float>(q1) + *m;
    } else {
      dst[j] = d * static_cast<float>(q0 - 16);
      dst[j + 16] = d * static_cast<float>(q1 - 16);
    }
  }
}

void dequantize_q4_1(const uint8_t* src, float* dst, int64_t n) {
  for (int64_t b = 0; b < n / 32; ++b, src += 20, dst += 32) {
    float m = f16_to_f32(load_u16(src + 2));
    dequantize_32_block(f16_to_f32(load_u16(src)), &m, nullptr, src + 4, dst);
  }
}

void dequantize_q5_0(const uint8_t* src, float* dst, int64_t n) {
  for (int64_t b = 0; b < n / 32; ++b, src += 22, dst += 32)
    dequantize_32_block(f16_to_f32(load_u16(src)), nullptr, src + 2, src + 6, dst);
}

void dequantize_q5_1(const uint8_t* src, float* dst, int64_t n) {
  for (int64_t b = 0; b < n / 32; ++b, src += 24, dst += 32) {
    float m = f16_to_f32(load_u16(src + 2));
    dequantize_32_block(f16_to_f32(load_u16(src)), &m, src + 4, src + 8, dst);
  }
}

// Round half away from zero to an int clamped to [lo, hi].
int round_clamp(float v, int lo, int hi) { return std::clamp(static_cast<int>(std::lround(v)), lo, hi); }

void quantize_q8_0(const float* src, uint8_t* dst, int64_t n) {
  for (int64_t b = 0; b < n / 32; ++b, src += 32, dst += 34) {
    float amax = 0.0f;
    for (int k = 0; k < 32; ++k) amax = std::max(amax, std::fabs(src[k]));
    uint16_t dh = f32_to_f16(amax / 127.0f);
    float d = f16_to_f32(dh);
    store_u16(dst, dh);
    for (int k = 0; k < 32; ++k) {
      int q = d > 0.0f ? round_clamp(src[k] / d, -127, 127) : 0;
      dst[2 + k] = static_cast<uint8_t>(static_cast<int8_t>(q));
    }
  }
}

void quantize_q4_0(const float* src, uint8_t* dst, int64_t n) {
  for (int64_t b = 0; b < n / 32; ++b, src += 32, dst += 18) {
    float extreme = 0.0f;  // the signed value of largest magnitude maps to code 0 (-8)
    for (int k = 0; k < 32; ++k)
      if (std::fabs(src[k]) > std::fabs(extreme)) extreme = src[k];
    uint16_t dh = f32_to_f16(extreme / -8.0f);
    float d = f16_to_f32(dh);
    store_u16(dst, dh);
    for (int j = 0; j < 16; ++j) {
      int lo = d != 0.0f ? round_clamp(src[j] / d, -8, 7) + 8 : 8;
      int hi = d != 0.0f ? round_clamp(src[j + 16] / d, -8, 7) + 8 : 8;
      dst[2 + j] = static_cast<uint8_t>(lo | (hi << 4));
    }
  }
}

// The 127 finite non-negative e4m3 values, ascending (codes 0x00..0x7E).
const std::array<float, 127>& fp8_positive_values() {
  static const std::array<float, 127> values = [] {
    std::array<float, 127> v{};
    for (int c = 0; c < 127; ++c) v[static_cast<size_t>(c)] = fp8_e4m3_to_f32(static_cast<uint8_t>(c));
    return v;
  }();
  return values;
}

// Nearest e4m3 code (ties to the even code), saturating at ±448; NaN stays NaN (0x7F / 0xFF).
uint8_t f32_to_fp8_e4m3(float f) {
  uint8_t sign = std::signbit(f) ? 0x80 : 0x00;
  if (std::isnan(f)) return static_cast<uint8_t>(sign | 0x7F);
  float a = std::fabs(f);
  const auto& v = fp8_positive_values();
  if (a >= v[126]) return static_cast<uint8_t>(sign | 126);
  size_t hi = static_cast<size_t>(std::lower_bound(v.begin(), v.end(), a) - v.begin());  // v[hi] >= a
  if (hi == 0 || v[hi] == a) return static_cast<uint8_t>(sign | hi);
  size_t lo = hi - 1;
  float dlo = a - v[lo], dhi = v[hi] - a;
  size_t pick = dlo < dhi ? lo : (dhi < dlo ? hi : (lo % 2 == 0 ? lo : hi));
  return static_cast<uint8_t>(sign | pick);
}

}  // namespace

void dequantize_row(DType t, const void* src_v, float* dst, int64_t n) {
  CAI_CHECK(n % dtype_info(t).block_elems == 0, "dequantize_row: {} elements is not a multiple of the {} block", n,
            dtype_name(t));
  const uint8_t* src = static_cast<const uint8_t*>(src_v);
  switch (t) {
    case DType::kF32: std::memcpy(dst, src, static_cast<size_t>(n) * 4); return;
    case DType::kF16:
      for (int64_t i = 0; i < n; ++i) dst[i] = f16_to_f32(load_u16(src + 2 * i));
      return;
    case DType::kBF16:
      for (int64_t i = 0; i < n; ++i) dst[i] = bf16_to_f32(load_u16(src + 2 * i));
      return;
    case DType::kQ8_0: dequantize_q8_0(src, dst, n); return;
    case DType::kQ4_0: dequantize_q4_0(src, dst, n); return;
    case DType::kQ4_K: quant_k::dequantize_q4_k(src, dst, n); return;
    case DType::kQ5_K: quant_k::dequantize_q5_k(src, dst, n); return;
    case DType::kQ6_K: quant_k::dequantize_q6_k(src, dst, n); return;
    case DType::kQ4_1: dequantize_q4_1(src, dst, n); return;
    case DType::kQ5_0: dequantize_q5_0(src, dst, n); return;
    case DType::kQ5_1: dequantize_q5_1(src, dst, n); return;
    case DType::kQ2_K: quant_k::dequantize_q2_k(src, dst, n); return;
    case DType::kQ3_K: quant_k::dequantize_q3_k(src, dst, n); return;
    case DType::kIQ4_NL: quant_iq::dequantize_iq4_nl(src, dst, n); return;
    case DType::kIQ4_XS: quant_iq::dequantize_iq4_xs(src, dst, n); return;
    case DType::kIQ3_XXS: quant_iq::dequantize_iq3_xxs(src, dst, n); return;
    case DType::kIQ3_S: quant_iq::dequantize_iq3_s(src, dst, n); return;
    case DType::kIQ2_XXS: quant_iq::dequantize_iq2_xxs(src, dst, n); return;
    case DType::kIQ2_XS: quant_iq::dequantize_iq2_xs(src, dst, n); return;
    case DType::kIQ2_S: quant_iq::dequantize_iq2_s(src, dst, n); return;
    case DType::kIQ1_S: quant_iq::dequantize_iq1_s(src, dst, n); return;
    case DType::kIQ1_M: quant_iq::dequantize_iq1_m(src, dst, n); return;
    case DType::kF8_E4M3:
      for (int64_t i = 0; i < n; ++i) dst[i] = fp8_e4m3_to_f32(src[i]);
      return;
    case DType::kI32:
      for (int64_t i = 0; i < n; ++i) {
        int32_t v;
        std::memcpy(&v, src + 4 * i, 4);
        dst[i] = static_cast<float>(v);
      }
      return;
    case DType::kI8:
      for (int64_t i = 0; i < n; ++i) dst[i] = static_cast<float>(static_cast<int8_t>(src[i]));
      return;
    case DType::kQ8_0_R16:
    case DType::kQ4_0_R16:
    case DType::kQ4_K_R16:
    case DType::kQ6_K_R16:
    case DType::kQ5_K_R16:
    case DType::kQ2_K_R16:
    case DType::kQ3_K_R16:
    case DType::kIQ4_NL_R16:
    case DType::kIQ4_XS_R16:
    case DType::kQ8_0_R16_I8:  // rows are interleaved in groups, there is no single row to decode
    case DType::kCount: break;
  }
  CAI_CHECK(false, "dequantize_row: invalid dtype {}", static_cast<int>(t));
}

Status quantize_row(DType t, const float* src, void* dst_v, int64_t n) {
  if (t >= DType::kCount) return invalid_argument("quantize_row: invalid dtype {}", static_cast<int>(t));
  const DTypeInfo& info = dtype_info(t);
  if (n < 0 || n % info.block_elems != 0)
    return invalid_argument("quantize_row: {} elements is not a multiple of the {} block size {}", n, info.name,
                            info.block_elems);
  uint8_t* dst = static_cast<uint8_t*>(dst_v);
  switch (t) {
    case DType::kF32: std::memcpy(dst, src, static_cast<size_t>(n) * 4); return {};
    case DType::kF16:
      for (int64_t i = 0; i < n; ++i) store_u16(dst + 2 * i, f32_to_f16(src[i]));
      return {};
    case DType::kBF16:
      for (int64_t i = 0; i < n; ++i) store_u16(dst + 2 * i, f32_to_bf16(src[i]));
      return {};
    case DType::kQ8_0: quantize_q8_0(src, dst, n); return {};
    case DType::kQ4_0: quantize_q4_0(src, dst, n); return {};
    case DType::kQ4_K: quant_k::quantize_q4_k(src, dst, n); return {};
    case DType::kQ5_K: quant_k::quantize_q5_k(src, dst, n); return {};
    case DType::kQ6_K: quant_k::quantize_q6_k(src, dst, n); return {};
    case DType::kF8_E4M3:
      for (int64_t i = 0; i < n; ++i) dst[i] = f32_to_fp8_e4m3(src[i]);
      return {};
    default: break;
  }
  return unsupported("quantize_row: no quantizer for {}", info.name);
}

}  // namespace cai
