// Tests for dequantize_row (hand-built blocks, hand-computed values) and quantize_row (round-trip error bounds).
#include "core/quant.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <random>
#include <vector>

namespace cai {
namespace {

void put_u16(uint8_t* p, uint16_t v) { std::memcpy(p, &v, 2); }

std::vector<float> dequant(DType t, const std::vector<uint8_t>& bytes, int64_t n) {
  std::vector<float> out(static_cast<size_t>(n));
  dequantize_row(t, bytes.data(), out.data(), n);
  return out;
}

TEST(Dequant, PlainTypes) {
  std::vector<uint8_t> f16 = {0x00, 0x3C, 0x00, 0xC0, 0x01, 0x00};  // 1, -2, 2^-24
  EXPECT_EQ(dequant(DType::kF16, f16, 3), (std::vector<float>{1.0f, -2.0f, 0x1p-24f}));
  std::vector<uint8_t> bf16 = {0x80, 0x3F, 0x40, 0xC0};  // 1, -3
  EXPECT_EQ(dequant(DType::kBF16, bf16, 2), (std::vector<float>{1.0f, -3.0f}));
  std::vector<uint8_t> f8 = {0x38, 0xC0, 0x7E, 0x01};
  EXPECT_EQ(dequant(DType::kF8_E4M3, f8, 4), (std::vector<float>{1.0f, -2.0f, 448.0f, 0x1p-9f}));
  std::vector<uint8_t> i8 = {0x05, 0xFB};
  EXPECT_EQ(dequant(DType::kI8, i8, 2), (std::vector<float>{5.0f, -5.0f}));
  std::vector<uint8_t> i32 = {0xFE, 0xFF, 0xFF, 0xFF};
  EXPECT_EQ(dequant(DType::kI32, i32, 1), (std::vector<float>{-2.0f}));
}

TEST(Dequant, Q8_0) {
  std::vector<uint8_t> b(34);
  put_u16(b.data(), 0x3800);  // d = 0.5
  for (int k = 0; k < 32; ++k) b[2 + k] = static_cast<uint8_t>(static_cast<int8_t>(k - 16));
  auto x = dequant(DType::kQ8_0, b, 32);
  for (int k = 0; k < 32; ++k) EXPECT_EQ(x[k], 0.5f * static_cast<float>(k - 16)) << k;
  EXPECT_EQ(x[0], -8.0f);
  EXPECT_EQ(x[31], 7.5f);
}

TEST(Dequant, Q4_0NibbleOrder) {
  std::vector<uint8_t> b(36);
  put_u16(b.data(), 0x4000);  // d = 2
  for (int j = 0; j < 16; ++j) b[2 + j] = static_cast<uint8_t>(j | ((15 - j) << 4));
  put_u16(b.data() + 18, 0xBC00);  // second block: d = -1, every code 8 → value 0 except qs[0]
  for (int j = 0; j < 16; ++j) b[20 + j] = 0x88;
  b[20] = 0x0F;  // element 0 code 15 → -7; element 16 code 0 → 8
  auto x = dequant(DType::kQ4_0, b, 64);
  for (int j = 0; j < 16; ++j) {
    EXPECT_EQ(x[j], 2.0f * static_cast<float>(j - 8)) << j;
    EXPECT_EQ(x[j + 16], 2.0f * static_cast<float>(7 - j)) << j;
  }
  EXPECT_EQ(x[32], -7.0f);
  EXPECT_EQ(x[48], 8.0f);
  EXPECT_EQ(x[33], 0.0f);
}

// Sub-block scales {1,2,3,4,33,40,50,63} and mins {5,6,7,8,17,20,45,62}, packed by hand per FORMATS.md §2.3:
// bytes 0-3 = sc[s] | (sc[s+4] >> 4) << 6, bytes 4-7 = m[s] | (m[s+4] >> 4) << 6, bytes 8-11 = sc[s+4]&15 | m[s+4]<<4.
constexpr uint8_t kPackedScales[12] = {0x81, 0x82, 0xC3, 0xC4, 0x45, 0x46, 0x87, 0xC8, 0x11, 0x48, 0xD2, 0xEF};
constexpr int kSc[8] = {1, 2, 3, 4, 33, 40, 50, 63};
constexpr int kMin[8] = {5, 6, 7, 8, 17, 20, 45, 62};

// d = 1, dmin = 0.5, qs[32c + l] = (l & 15) | ((l + c) & 15) << 4.
void fill_q4k_like(uint8_t* d_ptr, uint8_t* qs) {
  put_u16(d_ptr, 0x3C00);
  put_u16(d_ptr + 2, 0x3800);
  std::memcpy(d_ptr + 4, kPackedScales, 12);
  for (int c = 0; c < 4; ++c)
    for (int l = 0; l < 32; ++l) qs[32 * c + l] = static_cast<uint8_t>((l & 15) | (((l + c) & 15) << 4));
}

TEST(Dequant, Q4_K) {
  std::vector<uint8_t> b(144);
  fill_q4k_like(b.data(), b.data() + 16);
  auto x = dequant(DType::kQ4_K, b, 256);
  for (int c = 0; c < 4; ++c) {
    for (int l = 0; l < 32; ++l) {
      int s0 = 2 * c, s1 = 2 * c + 1;
      EXPECT_EQ(x[64 * c + l], 1.0f * kSc[s0] * (l & 15) - 0.5f * kMin[s0]) << c << " " << l;
      EXPECT_EQ(x[64 * c + 32 + l], 1.0f * kSc[s1] * ((l + c) & 15) - 0.5f * kMin[s1]) << c << " " << l;
    }
  }
  EXPECT_EQ(x[3], 0.5f);       // 1·3 − 2.5
  EXPECT_EQ(x[37], 7.0f);      // 2·5 − 3
  EXPECT_EQ(x[131], 90.5f);    // sub-block 4: 33·3 − 8.5
  EXPECT_EQ(x[224], 158.0f);   // sub-block 7: 63·3 − 31
  EXPECT_EQ(x[255], 95.0f);    // 63·2 − 31
}

TEST(Dequant, Q5_K) {
  std::vector<uint8_t> b(176);
  fill_q4k_like(b.data(), b.data() + 48);
  for (int l = 0; l < 32; ++l) b[16 + l] = static_cast<uint8_t>(l * 37);  // qh: bit s of qh[l] is the 5th bit
  auto x = dequant(DType::kQ5_K, b, 256);
  for (int c = 0; c < 4; ++c) {
    for (int l = 0; l < 32; ++l) {
      int qh = (l * 37) & 255, s0 = 2 * c, s1 = 2 * c + 1;
      int q0 = (l & 15) + 16 * ((qh >> s0) & 1), q1 = ((l + c) & 15) + 16 * ((qh >> s1) & 1);
      EXPECT_EQ(x[64 * c + l], 1.0f * kSc[s0] * q0 - 0.5f * kMin[s0]) << c << " " << l;
      EXPECT_EQ(x[64 * c + 32 + l], 1.0f * kSc[s1] * q1 - 0.5f * kMin[s1]) << c << " " << l;
    }
  }
  EXPECT_EQ(x[3], 16.5f);      // qh[3] = 111 has bit 0: q = 19 → 19 − 2.5
  EXPECT_EQ(x[133], 684.5f);   // qh[5] = 185 has bit 4: q = 21 → 33·21 − 8.5
  EXPECT_EQ(x[255], 95.0f);    // qh[31] = 123 lacks bit 7
}

TEST(Dequant, Q6_K) {
  std::vector<uint8_t> b(210);
  for (int i = 0; i < 128; ++i) b[i] = static_cast<uint8_t>(i * 7);            // ql
  for (int i = 0; i < 64; ++i) b[128 + i] = static_cast<uint8_t>(i * 13 + 5);  // qh
  for (int j = 0; j < 16; ++j) b[192 + j] = static_cast<uint8_t>(static_cast<int8_t>(j * 9 - 70));
  put_u16(b.data() + 208, 0x3400);  // d = 0.25
  auto x = dequant(DType::kQ6_K, b, 256);
  // ggml's loop view: per half h and l < 32, four elements share ql[64h+l], ql[64h+l+32] and qh[32h+l].
  for (int h = 0; h < 2; ++h) {
    for (int l = 0; l < 32; ++l) {
      int la = (64 * h + l) * 7 & 255, lb = (64 * h + l + 32) * 7 & 255, qh = ((32 * h + l) * 13 + 5) & 255;
      int q[4] = {(la & 15) | (qh & 3) << 4, (lb & 15) | ((qh >> 2) & 3) << 4, (la >> 4) | ((qh >> 4) & 3) << 4,
                  (lb >> 4) | ((qh >> 6) & 3) << 4};
      for (int g = 0; g < 4; ++g) {
        int n = 128 * h + 32 * g + l;
        EXPECT_EQ(x[n], 0.25f * static_cast<float>((n / 16) * 9 - 70) * static_cast<float>(q[g] - 32)) << n;
      }
    }
  }
  EXPECT_EQ(x[0], 280.0f);      // q = 16, scale −70: 0.25·−70·−16
  EXPECT_EQ(x[200], -161.5f);   // q = 15, scale 38
  EXPECT_EQ(x[255], -406.25f);  // q = 7, scale 65
}

std::vector<float> gaussian(int64_t n, uint32_t seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> dist(0.0f, 1.0f);
  std::vector<float> v(static_cast<size_t>(n));
  for (auto& x : v) x = dist(rng);
  return v;
}

// Quantize then dequantize into *out; returns RMS(error) / RMS(signal).
double round_trip(DType t, const std::vector<float>& src, std::vector<float>* out) {
  int64_t n = static_cast<int64_t>(src.size());
  std::vector<uint8_t> bytes(row_bytes(t, n));
  Status st = quantize_row(t, src.data(), bytes.data(), n);
  EXPECT_TRUE(st.ok()) << st.to_string();
  out->resize(src.size());
  dequantize_row(t, bytes.data(), out->data(), n);
  double err = 0, sig = 0;
  for (size_t i = 0; i < src.size(); ++i) {
    err += ((*out)[i] - src[i]) * ((*out)[i] - src[i]);
    sig += src[i] * src[i];
  }
  return std::sqrt(err / sig);
}

TEST(Quantize, RoundTripErrorBounds) {
  struct Case {
    DType t;
    double max_rel_rms;
  };
  // Uniform-quantizer noise on gaussian data: ~range/levels/sqrt(12) per block, plus 6-bit scale rounding.
  const Case cases[] = {{DType::kF16, 3e-4}, {DType::kBF16, 2.5e-3}, {DType::kF8_E4M3, 0.04},
                        {DType::kQ8_0, 0.008}, {DType::kQ4_0, 0.11},  {DType::kQ4_K, 0.1},
                        {DType::kQ5_K, 0.05}, {DType::kQ6_K, 0.025}};
  auto src = gaussian(4096, 7);
  std::vector<float> out;
  for (const Case& c : cases) {
    double rel = round_trip(c.t, src, &out);
    EXPECT_LT(rel, c.max_rel_rms) << dtype_name(c.t);
    EXPECT_GT(rel, 0.0) << dtype_name(c.t);
  }
}

TEST(Quantize, BlockErrorWithinHalfStep) {
  auto src = gaussian(1024, 11);
  std::vector<float> out;
  round_trip(DType::kQ8_0, src, &out);
  for (size_t b = 0; b < src.size() / 32; ++b) {
    float amax = 0;
    for (int k = 0; k < 32; ++k) amax = std::max(amax, std::fabs(src[32 * b + k]));
    for (int k = 0; k < 32; ++k) EXPECT_LE(std::fabs(out[32 * b + k] - src[32 * b + k]), amax / 127 * 0.51f);
  }
  round_trip(DType::kQ4_0, src, &out);
  for (size_t b = 0; b < src.size() / 32; ++b) {
    float amax = 0;
    for (int k = 0; k < 32; ++k) amax = std::max(amax, std::fabs(src[32 * b + k]));
    // The extreme maps exactly to code 0; the far side may clamp at code 15, one full step away.
    for (int k = 0; k < 32; ++k) EXPECT_LE(std::fabs(out[32 * b + k] - src[32 * b + k]), amax / 8 * 1.01f);
  }
}

TEST(Quantize, ZeroBlocksStayZero) {
  std::vector<float> zeros(256, 0.0f), out;
  for (DType t : {DType::kQ8_0, DType::kQ4_0, DType::kQ4_K, DType::kQ5_K, DType::kQ6_K}) {
    round_trip(t, zeros, &out);
    for (float v : out) ASSERT_EQ(v, 0.0f) << dtype_name(t);
  }
}

TEST(Quantize, Fp8NearestSaturatingTiesToEven) {
  const float in[] = {1.0f, 1.0625f, 1.1875f, 1.1f, 500.0f, -1e9f, 448.0f, 0x1p-10f, 0x1.8p-10f, -0.0f, 3.0f};
  const uint8_t want[] = {0x38, 0x38, 0x3A, 0x39, 0x7E, 0xFE, 0x7E, 0x00, 0x01, 0x80, 0x44};
  uint8_t got[std::size(in)];
  ASSERT_TRUE(quantize_row(DType::kF8_E4M3, in, got, std::size(in)).ok());
  for (size_t i = 0; i < std::size(in); ++i) EXPECT_EQ(got[i], want[i]) << in[i];
  float nan = NAN;
  uint8_t code;
  ASSERT_TRUE(quantize_row(DType::kF8_E4M3, &nan, &code, 1).ok());
  EXPECT_EQ(code & 0x7F, 0x7F);
  // Every finite code encodes to itself.
  for (int c = 0; c < 256; ++c) {
    if ((c & 0x7F) == 0x7F) continue;
    float v = fp8_e4m3_to_f32(static_cast<uint8_t>(c));
    ASSERT_TRUE(quantize_row(DType::kF8_E4M3, &v, &code, 1).ok());
    EXPECT_EQ(code, c);
  }
}

TEST(Quantize, Errors) {
  std::vector<float> src(33, 1.0f);
  std::vector<uint8_t> dst(64);
  Status st = quantize_row(DType::kQ8_0, src.data(), dst.data(), 33);
  EXPECT_EQ(st.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(st.message().find("q8_0"), std::string::npos);
  EXPECT_EQ(quantize_row(DType::kQ4_K, src.data(), dst.data(), 32).code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(quantize_row(DType::kI32, src.data(), dst.data(), 4).code(), StatusCode::kUnsupported);
  EXPECT_EQ(quantize_row(DType::kI8, src.data(), dst.data(), 4).code(), StatusCode::kUnsupported);
}

}  // namespace
}  // namespace cai
