// Tests for the dtype table, name/ggml-id lookups and the exact f16 / bf16 / fp8 scalar conversions.
#include "core/dtype.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>

namespace cai {
namespace {

uint32_t bits(float f) {
  uint32_t u;
  std::memcpy(&u, &f, 4);
  return u;
}

float from_bits(uint32_t u) {
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}

TEST(DType, TableMatchesGgml) {
  struct Row {
    DType t;
    const char* name;
    int elems, bytes, ggml;
  };
  const Row rows[] = {
      {DType::kF32, "f32", 1, 4, 0},
      {DType::kF16, "f16", 1, 2, 1},
      {DType::kBF16, "bf16", 1, 2, 30},
      {DType::kQ8_0, "q8_0", 32, 34, 8},
      {DType::kQ4_0, "q4_0", 32, 18, 2},
      {DType::kQ4_K, "q4_K", 256, 144, 12},
      {DType::kQ5_K, "q5_K", 256, 176, 13},
      {DType::kQ6_K, "q6_K", 256, 210, 14},
      {DType::kF8_E4M3, "f8_e4m3", 1, 1, -1},
      {DType::kI32, "i32", 1, 4, 26},
      {DType::kI8, "i8", 1, 1, 24},
      {DType::kQ4_1, "q4_1", 32, 20, 3},
      {DType::kQ5_0, "q5_0", 32, 22, 6},
      {DType::kQ5_1, "q5_1", 32, 24, 7},
      {DType::kQ2_K, "q2_K", 256, 84, 10},
      {DType::kQ3_K, "q3_K", 256, 110, 11},
      {DType::kIQ4_NL, "iq4_nl", 32, 18, 20},
      {DType::kIQ4_XS, "iq4_xs", 256, 136, 23},
      {DType::kIQ3_XXS, "iq3_xxs", 256, 98, 18},
      {DType::kIQ3_S, "iq3_s", 256, 110, 21},
      {DType::kIQ2_XXS, "iq2_xxs", 256, 66, 16},
      {DType::kIQ2_XS, "iq2_xs", 256, 74, 17},
      {DType::kIQ2_S, "iq2_s", 256, 82, 22},
      {DType::kIQ1_S, "iq1_s", 256, 50, 19},
      {DType::kIQ1_M, "iq1_m", 256, 56, 29},
      {DType::kQ8_0_R16, "q8_0_r16", 32, 34, -1},
      {DType::kQ4_0_R16, "q4_0_r16", 32, 18, -1},
      {DType::kQ4_K_R16, "q4_k_r16", 256, 144, -1},
      {DType::kQ6_K_R16, "q6_k_r16", 256, 210, -1},
      {DType::kQ5_K_R16, "q5_k_r16", 256, 176, -1},
      {DType::kQ2_K_R16, "q2_k_r16", 256, 84, -1},
      {DType::kQ3_K_R16, "q3_k_r16", 256, 110, -1},
      {DType::kIQ4_NL_R16, "iq4_nl_r16", 32, 18, -1},
      {DType::kIQ4_XS_R16, "iq4_xs_r16", 256, 136, -1},
      {DType::kQ8_0_R16_I8, "q8_0_r16_i8", 32, 34, -1},
  };
  ASSERT_EQ(std::size(rows), static_cast<size_t>(DType::kCount));
  for (const Row& r : rows) {
    const DTypeInfo& i = dtype_info(r.t);
    EXPECT_EQ(i.name, r.name);
    EXPECT_EQ(i.block_elems, r.elems) << r.name;
    EXPECT_EQ(i.block_bytes, r.bytes) << r.name;
    EXPECT_EQ(i.ggml_id, r.ggml) << r.name;
    if (r.ggml >= 0) {
      EXPECT_EQ(dtype_from_ggml(static_cast<uint32_t>(r.ggml)), r.t) << r.name;
    }
    EXPECT_EQ(dtype_from_name(r.name), r.t);
  }
}

TEST(DType, Lookups) {
  EXPECT_EQ(dtype_from_name("Q4_k"), DType::kQ4_K);
  EXPECT_EQ(dtype_from_name("F8_E4M3"), DType::kF8_E4M3);
  EXPECT_EQ(dtype_from_name("BF16"), DType::kBF16);
  EXPECT_EQ(dtype_from_name("IQ2_xxs"), DType::kIQ2_XXS);
  EXPECT_FALSE(dtype_from_name("q8_K").has_value());
  EXPECT_FALSE(dtype_from_name("").has_value());
  EXPECT_FALSE(dtype_from_ggml(15).has_value());  // Q8_K: a real ggml type (activations only) we do not carry
  EXPECT_FALSE(dtype_from_ggml(34).has_value());  // TQ1_0 in mainline, other meanings in forks
  EXPECT_FALSE(dtype_from_ggml(0xFFFFFFFFu).has_value());
  EXPECT_TRUE(is_quantized(DType::kQ6_K));
  EXPECT_FALSE(is_quantized(DType::kF8_E4M3));
  EXPECT_EQ(row_bytes(DType::kQ4_K, 512), 288u);
  EXPECT_EQ(row_bytes(DType::kQ8_0, 64), 68u);
  EXPECT_EQ(row_bytes(DType::kBF16, 7), 14u);
}

TEST(F16, DecodeEdgeCases) {
  EXPECT_EQ(f16_to_f32(0x3C00), 1.0f);
  EXPECT_EQ(f16_to_f32(0xC000), -2.0f);
  EXPECT_EQ(f16_to_f32(0x7BFF), 65504.0f);
  EXPECT_EQ(f16_to_f32(0x0001), std::ldexp(1.0f, -24));     // smallest subnormal
  EXPECT_EQ(f16_to_f32(0x03FF), std::ldexp(1023.0f, -24));  // largest subnormal
  EXPECT_EQ(f16_to_f32(0x0400), std::ldexp(1.0f, -14));     // smallest normal
  EXPECT_EQ(f16_to_f32(0x3555), 0x1.554p-2f);
  EXPECT_TRUE(std::isinf(f16_to_f32(0x7C00)) && f16_to_f32(0x7C00) > 0);
  EXPECT_TRUE(std::isinf(f16_to_f32(0xFC00)) && f16_to_f32(0xFC00) < 0);
  EXPECT_TRUE(std::isnan(f16_to_f32(0x7E00)));
  EXPECT_TRUE(std::isnan(f16_to_f32(0xFC01)));
  float nz = f16_to_f32(0x8000);
  EXPECT_EQ(nz, 0.0f);
  EXPECT_TRUE(std::signbit(nz));
}

TEST(F16, EncodeRoundsToNearestEven) {
  EXPECT_EQ(f32_to_f16(1.0f), 0x3C00);
  EXPECT_EQ(f32_to_f16(-0.0f), 0x8000);
  EXPECT_EQ(f32_to_f16(65504.0f), 0x7BFF);
  EXPECT_EQ(f32_to_f16(65519.99f), 0x7BFF);
  EXPECT_EQ(f32_to_f16(65520.0f), 0x7C00);  // tie between 65504 (odd) and 65536 → inf
  EXPECT_EQ(f32_to_f16(1e6f), 0x7C00);
  EXPECT_EQ(f32_to_f16(-INFINITY), 0xFC00);
  EXPECT_EQ(f32_to_f16(1.0f + 0x1p-11f), 0x3C00);      // tie → even mantissa 0
  EXPECT_EQ(f32_to_f16(1.0f + 3 * 0x1p-11f), 0x3C02);  // tie → even mantissa 2
  EXPECT_EQ(f32_to_f16(1.0f + 0x1p-11f + 0x1p-20f), 0x3C01);
  EXPECT_EQ(f32_to_f16(0x1p-24f), 0x0001);
  EXPECT_EQ(f32_to_f16(0x1p-25f), 0x0000);  // tie between 0 and 2^-24 → 0
  EXPECT_EQ(f32_to_f16(0x1.8p-25f), 0x0001);
  EXPECT_EQ(f32_to_f16(0x1.8p-24f), 0x0002);    // 1.5 · 2^-24: tie → 2
  EXPECT_EQ(f32_to_f16(0x1.ff8p-15f), 0x03FF);  // 1023 · 2^-24, largest subnormal
  EXPECT_EQ(f32_to_f16(0x1.ffcp-15f), 0x0400);  // 1023.5 · 2^-24: tie → 1024, the smallest normal
  EXPECT_EQ(f32_to_f16(0x1p-30f), 0x0000);
  uint16_t nan = f32_to_f16(NAN);
  EXPECT_EQ(nan & 0x7C00, 0x7C00);
  EXPECT_NE(nan & 0x03FF, 0);
}

TEST(F16, EveryCodeRoundTrips) {
  for (uint32_t h = 0; h < 65536; ++h) {
    float f = f16_to_f32(static_cast<uint16_t>(h));
    if (std::isnan(f)) {
      EXPECT_TRUE(std::isnan(f16_to_f32(f32_to_f16(f)))) << h;
    } else {
      ASSERT_EQ(f32_to_f16(f), h) << "code " << h;
    }
  }
}

TEST(BF16, RoundsToNearestEvenAndKeepsNan) {
  EXPECT_EQ(f32_to_bf16(1.0f), 0x3F80);
  EXPECT_EQ(bf16_to_f32(0x3F80), 1.0f);
  EXPECT_EQ(f32_to_bf16(1.0f + 0x1p-8f), 0x3F80);      // tie → even
  EXPECT_EQ(f32_to_bf16(1.0f + 3 * 0x1p-8f), 0x3F82);  // tie → even
  EXPECT_EQ(f32_to_bf16(1.0f + 0x1p-8f + 0x1p-20f), 0x3F81);
  EXPECT_EQ(f32_to_bf16(-2.0f), 0xC000);
  EXPECT_EQ(f32_to_bf16(from_bits(0x7F7FFFFFu)), 0x7F80);  // FLT_MAX rounds to +inf
  EXPECT_EQ(f32_to_bf16(INFINITY), 0x7F80);
  EXPECT_TRUE(std::isnan(bf16_to_f32(f32_to_bf16(NAN))));
  EXPECT_TRUE(std::isnan(bf16_to_f32(f32_to_bf16(from_bits(0x7F800001u)))));  // payload only in low bits
  EXPECT_EQ(bits(bf16_to_f32(0x8000)), 0x80000000u);
}

TEST(Fp8E4M3, SpotValues) {
  EXPECT_EQ(fp8_e4m3_to_f32(0x7E), 448.0f);
  EXPECT_EQ(fp8_e4m3_to_f32(0xFE), -448.0f);
  EXPECT_EQ(fp8_e4m3_to_f32(0x08), 0.015625f);     // 2^-6, smallest normal
  EXPECT_EQ(fp8_e4m3_to_f32(0x01), 0.001953125f);  // 2^-9, smallest subnormal
  EXPECT_EQ(fp8_e4m3_to_f32(0x07), 7 * 0.001953125f);
  EXPECT_EQ(fp8_e4m3_to_f32(0x0F), 1.875f * 0.015625f);
  EXPECT_EQ(fp8_e4m3_to_f32(0x38), 1.0f);
  EXPECT_EQ(fp8_e4m3_to_f32(0x3D), 1.625f);
  EXPECT_EQ(fp8_e4m3_to_f32(0xC0), -2.0f);
  EXPECT_EQ(fp8_e4m3_to_f32(0x00), 0.0f);
  EXPECT_FALSE(std::signbit(fp8_e4m3_to_f32(0x00)));
  EXPECT_EQ(fp8_e4m3_to_f32(0x80), 0.0f);
  EXPECT_TRUE(std::signbit(fp8_e4m3_to_f32(0x80)));
  EXPECT_TRUE(std::isnan(fp8_e4m3_to_f32(0x7F)));
  EXPECT_TRUE(std::isnan(fp8_e4m3_to_f32(0xFF)));
}

TEST(Fp8E4M3, AllCodesOrderedAndSymmetric) {
  int n_nan = 0;
  for (int c = 0; c < 256; ++c) {
    float v = fp8_e4m3_to_f32(static_cast<uint8_t>(c));
    if (std::isnan(v)) {
      ++n_nan;
      continue;
    }
    EXPECT_FALSE(std::isinf(v)) << c;
    EXPECT_EQ(v, -fp8_e4m3_to_f32(static_cast<uint8_t>(c ^ 0x80))) << c;
    if ((c & 0x7F) > 0 && (c & 0x7F) < 127) {
      float prev = fp8_e4m3_to_f32(static_cast<uint8_t>(c - 1));
      EXPECT_GT(std::fabs(v), std::fabs(prev)) << c;
      // Steps are 2^-9 below 2^-5 (subnormals and the first binade), then double per binade.
      int e = std::max(1, (c & 0x7F) >> 3);
      float step = std::ldexp(1.0f, e - 10);
      if ((c & 7) != 0 || (c & 0x7F) <= 8) {
        EXPECT_EQ(std::fabs(v) - std::fabs(prev), step) << c;
      }
    }
  }
  EXPECT_EQ(n_nan, 2);
}

}  // namespace
}  // namespace cai
