// DType table (names, block sizes, ggml ids) and exact scalar conversions between f32, f16, bf16 and fp8 e4m3.
#include "core/dtype.h"

#include <array>
#include <cmath>
#include <cstring>
#include <limits>

namespace cai {

namespace {

constexpr std::array<DTypeInfo, static_cast<size_t>(DType::kCount)> kInfos = {{
    {"f32", 1, 4, 0},
    {"f16", 1, 2, 1},
    {"bf16", 1, 2, 30},
    {"q8_0", 32, 34, 8},
    {"q4_0", 32, 18, 2},
    {"q4_K", 256, 144, 12},
    {"q5_K", 256, 176, 13},
    {"q6_K", 256, 210, 14},
    {"f8_e4m3", 1, 1, -1},
    {"i32", 1, 4, 26},
    {"i8", 1, 1, 24},
    {"q4_1", 32, 20, 3},
    {"q5_0", 32, 22, 6},
    {"q5_1", 32, 24, 7},
    {"q2_K", 256, 84, 10},
    {"q3_K", 256, 110, 11},
    {"iq4_nl", 32, 18, 20},
    {"iq4_xs", 256, 136, 23},
    {"iq3_xxs", 256, 98, 18},
    {"iq3_s", 256, 110, 21},
    {"iq2_xxs", 256, 66, 16},
    {"iq2_xs", 256, 74, 17},
    {"iq2_s", 256, 82, 22},
    {"iq1_s", 256, 50, 19},
    {"iq1_m", 256, 56, 29},
    {"q8_0_r16", 32, 34, -1},
    {"q4_0_r16", 32, 18, -1},
    {"q4_k_r16", 256, 144, -1},
    {"q6_k_r16", 256, 210, -1},
    {"q5_k_r16", 256, 176, -1},
    {"q2_k_r16", 256, 84, -1},
    {"q3_k_r16", 256, 110, -1},
    {"iq4_nl_r16", 32, 18, -1},
    {"iq4_xs_r16", 256, 136, -1},
    {"q8_0_r16_i8", 32, 34, -1},
}};

uint32_t f32_bits(float f) {
  uint32_t u;
  std::memcpy(&u, &f, 4);
  return u;
}

float bits_f32(uint32_t u) {
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}

char ascii_lower(char c) { return (c >= 'A' && c <= 'Z') ? static_cast<char>(c - 'A' + 'a') : c; }

// Decodes one e4m3fn code from its fields (sign, 4-bit exponent bias 7, 3-bit mantissa; 0x7F/0xFF NaN).
float decode_e4m3(uint8_t code) {
  int exp = (code >> 3) & 15;
  int man = code & 7;
  float mag;
  if (exp == 15 && man == 7) {
    mag = std::numeric_limits<float>::quiet_NaN();
  } else if (exp == 0) {
    mag = std::ldexp(static_cast<float>(man), -9);
  } else {
    mag = std::ldexp(1.0f + static_cast<float>(man) / 8.0f, exp - 7);
  }
  return (code & 0x80) ? -mag : mag;
}

struct Fp8Table {
  std::array<float, 256> v;
  Fp8Table() {
    for (int i = 0; i < 256; ++i) v[static_cast<size_t>(i)] = decode_e4m3(static_cast<uint8_t>(i));
  }
};

}  // namespace

const DTypeInfo& dtype_info(DType t) {
  size_t i = static_cast<size_t>(t);
  if (i >= kInfos.size()) i = 0;  // only reachable through a cast of a bad value; keep it memory-safe
  return kInfos[i];
}

std::optional<DType> dtype_from_ggml(uint32_t ggml_id) {
  for (size_t i = 0; i < kInfos.size(); ++i)
    if (kInfos[i].ggml_id >= 0 && static_cast<uint32_t>(kInfos[i].ggml_id) == ggml_id) return static_cast<DType>(i);
  return std::nullopt;
}

std::optional<DType> dtype_from_name(std::string_view name) {
  for (size_t i = 0; i < kInfos.size(); ++i) {
    std::string_view n = kInfos[i].name;
    if (n.size() != name.size()) continue;
    bool same = true;
    for (size_t k = 0; k < n.size() && same; ++k) same = ascii_lower(n[k]) == ascii_lower(name[k]);
    if (same) return static_cast<DType>(i);
  }
  return std::nullopt;
}

float f16_to_f32(uint16_t h) {
  uint32_t sign = static_cast<uint32_t>(h & 0x8000) << 16;
  uint32_t exp = (h >> 10) & 31;
  uint32_t man = h & 0x3FF;
  if (exp == 31) return bits_f32(sign | 0x7F800000u | (man << 13));  // inf / NaN (payload kept)
  if (exp == 0) {
    // Subnormal or zero: man * 2^-24 is exact in f32.
    float mag = static_cast<float>(man) * 0x1p-24f;
    return (sign ? -mag : mag);
  }
  return bits_f32(sign | ((exp + 112) << 23) | (man << 13));
}

uint16_t f32_to_f16(float f) {
  uint32_t u = f32_bits(f);
  uint16_t sign = static_cast<uint16_t>((u >> 16) & 0x8000);
  uint32_t abs = u & 0x7FFFFFFFu;
  if (abs > 0x7F800000u) return static_cast<uint16_t>(sign | 0x7E00 | ((abs >> 13) & 0x3FF));  // NaN stays NaN
  if (abs >= 0x477FF000u) return static_cast<uint16_t>(sign | 0x7C00);  // rounds to >= 65520: inf
  if (abs < 0x38800000u) {
    // Result is an f16 subnormal (or zero): value / 2^-24 rounded to nearest even integer.
    float mag = bits_f32(abs) * 0x1p24f;                            // exact (power-of-two scaling of a small number)
    float r = std::nearbyint(mag);                                  // default rounding mode: nearest even
    return static_cast<uint16_t>(sign | static_cast<uint16_t>(r));  // 1024 becomes the smallest normal
  }
  // Normal: rebias exponent, round the 13 dropped mantissa bits to nearest even (carry may bump the exponent).
  uint32_t rebiased = abs - (112u << 23);
  uint32_t lsb = (rebiased >> 13) & 1;
  rebiased += 0xFFFu + lsb;
  return static_cast<uint16_t>(sign | (rebiased >> 13));
}

uint16_t f32_to_bf16(float f) {
  uint32_t u = f32_bits(f);
  if ((u & 0x7FFFFFFFu) > 0x7F800000u) return static_cast<uint16_t>((u >> 16) | 0x0040);  // quiet NaN
  uint32_t lsb = (u >> 16) & 1;
  u += 0x7FFFu + lsb;
  return static_cast<uint16_t>(u >> 16);
}

float fp8_e4m3_to_f32(uint8_t code) {
  static const Fp8Table table;  // function-local: safe from static-initialisation order
  return table.v[code];
}

}  // namespace cai
