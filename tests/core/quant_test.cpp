// Tests for dequantize_row (hand-built blocks, hand-computed values) and quantize_row (round-trip error bounds).
#include "core/quant.h"

#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <cstring>
#include <random>
#include <vector>

#include "core/quant_grids.h"

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

// Sub-block scales {1,2,3,4,33,40,50,63} and mins {5,6,7,8,17,20,45,62}, packed by hand per
// docs/design/formats.md#k-quants:
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
  EXPECT_EQ(x[3], 0.5f);      // 1·3 − 2.5
  EXPECT_EQ(x[37], 7.0f);     // 2·5 − 3
  EXPECT_EQ(x[131], 90.5f);   // sub-block 4: 33·3 − 8.5
  EXPECT_EQ(x[224], 158.0f);  // sub-block 7: 63·3 − 31
  EXPECT_EQ(x[255], 95.0f);   // 63·2 − 31
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
  EXPECT_EQ(x[3], 16.5f);     // qh[3] = 111 has bit 0: q = 19 → 19 − 2.5
  EXPECT_EQ(x[133], 684.5f);  // qh[5] = 185 has bit 4: q = 21 → 33·21 − 8.5
  EXPECT_EQ(x[255], 95.0f);   // qh[31] = 123 lacks bit 7
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

// ---- The GGUF types past the first eight. Blocks are filled with byte patterns; the expected value of every element
// is computed here from the layout rules (docs/design/formats.md#32-element-blocks, docs/design/formats.md#k-quants,
// quant_iq.h), then a few are spelled out by hand.

TEST(Dequant, NewGgufTypesReachableByGgmlId) {
  struct Row {
    DType t;
    uint32_t ggml;
    int elems, bytes;
  };
  const Row rows[] = {{DType::kQ4_1, 3, 32, 20},      {DType::kQ5_0, 6, 32, 22},      {DType::kQ5_1, 7, 32, 24},
                      {DType::kQ2_K, 10, 256, 84},    {DType::kQ3_K, 11, 256, 110},   {DType::kIQ2_XXS, 16, 256, 66},
                      {DType::kIQ2_XS, 17, 256, 74},  {DType::kIQ3_XXS, 18, 256, 98}, {DType::kIQ1_S, 19, 256, 50},
                      {DType::kIQ4_NL, 20, 32, 18},   {DType::kIQ3_S, 21, 256, 110},  {DType::kIQ2_S, 22, 256, 82},
                      {DType::kIQ4_XS, 23, 256, 136}, {DType::kIQ1_M, 29, 256, 56}};
  for (const Row& r : rows) {
    EXPECT_EQ(dtype_from_ggml(r.ggml), r.t) << r.ggml;
    EXPECT_EQ(dtype_info(r.t).block_elems, r.elems) << r.ggml;
    EXPECT_EQ(dtype_info(r.t).block_bytes, r.bytes) << r.ggml;
    // No quantizers for these: the decoders are only for loading GGUF files.
    std::vector<float> src(static_cast<size_t>(r.elems), 1.0f);
    std::vector<uint8_t> dst(static_cast<size_t>(r.bytes));
    EXPECT_EQ(quantize_row(r.t, src.data(), dst.data(), r.elems).code(), StatusCode::kUnsupported) << r.ggml;
  }
}

void put_u32(uint8_t* p, uint32_t v) { std::memcpy(p, &v, 4); }

// A byte pattern that differs per block b and position i.
uint8_t pat(int b, int i, int mul, int add) { return static_cast<uint8_t>(i * mul + add + 101 * b); }

// Byte j of a grid entry (element j of the group).
int grid_byte(uint64_t entry, int j) { return static_cast<int>((entry >> (8 * j)) & 0xFF); }

// The IQ2/IQ3 sign byte of a 7-bit sign index: bit 7 set when the index has an odd number of set bits.
int sign_byte_of_index(int index7) { return index7 | ((std::popcount(static_cast<unsigned>(index7)) & 1) << 7); }

float signed_value(float dl, int magnitude, int sign_byte, int j) {
  float v = dl * static_cast<float>(magnitude);
  return (sign_byte >> j) & 1 ? -v : v;
}

// f16 scales for the hand-built blocks.
constexpr uint16_t kF16One = 0x3C00, kF16Half = 0x3800, kF16MinusHalf = 0xB800, kF16Two = 0x4000;

// Builds two consecutive blocks with fill(bytes, b), decodes them in one call and checks every element against want.
template <class Fill, class Want>
std::vector<float> check_blocks(DType t, Fill fill, Want want) {
  const DTypeInfo& info = dtype_info(t);
  std::vector<uint8_t> bytes(2 * static_cast<size_t>(info.block_bytes));
  for (int b = 0; b < 2; ++b) fill(bytes.data() + b * info.block_bytes, b);
  std::vector<float> x = dequant(t, bytes, 2 * info.block_elems);
  for (int b = 0; b < 2; ++b)
    for (int i = 0; i < info.block_elems; ++i)
      EXPECT_EQ(x[static_cast<size_t>(b * info.block_elems + i)], want(b, i))
          << dtype_name(t) << " block " << b << " element " << i;
  return x;
}

// Q4_1 / Q5_1: x = d·q + m; Q5_0: x = d·(q − 16); the 5th bit of element k is bit k of the u32 qh.
TEST(Dequant, Q4_1Q5_0Q5_1) {
  auto d_of = [](int b) { return b ? 0.5f : 2.0f; };
  auto m_of = [](int b) { return b ? 0.25f : -1.0f; };
  auto qh_of = [](int b) { return b ? 0x0F0F00F1u : 0xA5A5F00Fu; };
  auto nibble = [](int b, int k) { return k < 16 ? pat(b, k, 7, 3) & 15 : pat(b, k - 16, 7, 3) >> 4; };
  auto fill_dm = [&](uint8_t* p, int b) {
    put_u16(p, b ? kF16Half : kF16Two);
    put_u16(p + 2, b ? 0x3400 : 0xBC00);  // m = 0.25, −1
  };
  auto fill_qs = [](uint8_t* qs, int b) {
    for (int j = 0; j < 16; ++j) qs[j] = pat(b, j, 7, 3);
  };
  auto q5 = [&](int b, int k) { return nibble(b, k) + 16 * static_cast<int>((qh_of(b) >> k) & 1); };
  auto x41 = check_blocks(
      DType::kQ4_1,
      [&](uint8_t* p, int b) {
        fill_dm(p, b);
        fill_qs(p + 4, b);
      },
      [&](int b, int k) { return d_of(b) * static_cast<float>(nibble(b, k)) + m_of(b); });
  auto x50 = check_blocks(
      DType::kQ5_0,
      [&](uint8_t* p, int b) {
        put_u16(p, b ? kF16Half : kF16Two);
        put_u32(p + 2, qh_of(b));
        fill_qs(p + 6, b);
      },
      [&](int b, int k) { return d_of(b) * static_cast<float>(q5(b, k) - 16); });
  auto x51 = check_blocks(
      DType::kQ5_1,
      [&](uint8_t* p, int b) {
        fill_dm(p, b);
        put_u32(p + 4, qh_of(b));
        fill_qs(p + 8, b);
      },
      [&](int b, int k) { return d_of(b) * static_cast<float>(q5(b, k)) + m_of(b); });
  // qs[1] = 10 (0x0A): element 1 nibble 10, element 17 nibble 0; qh bit 1 set, bit 17 clear (0xA5A5F00F).
  EXPECT_EQ(x41[1], 19.0f);    // 2·10 − 1
  EXPECT_EQ(x41[17], -1.0f);   // 2·0 − 1
  EXPECT_EQ(x50[1], 20.0f);    // 2·(26 − 16)
  EXPECT_EQ(x50[17], -32.0f);  // 2·(0 − 16)
  EXPECT_EQ(x51[1], 51.0f);    // 2·26 − 1
}

// Q2_K / Q3_K element n: h = n/128, r = n%128, j = r/32, p = (r%32)/16, l = r%16; 2 bits at qs[32h+16p+l] >> 2j.
int q2k_bits(const uint8_t* qs, int n) {
  int h = n / 128, r = n % 128, j = r / 32, p = (r % 32) / 16, l = r % 16;
  return (qs[32 * h + 16 * p + l] >> (2 * j)) & 3;
}

TEST(Dequant, Q2_K) {
  auto fill = [](uint8_t* p, int b) {
    for (int k = 0; k < 16; ++k) p[k] = pat(b, k, 23, 7);  // low nibble scale, high nibble min
    for (int i = 0; i < 64; ++i) p[16 + i] = pat(b, i, 37, 11);
    put_u16(p + 80, b ? kF16Half : kF16One);
    put_u16(p + 82, b ? kF16One : kF16Half);
  };
  auto want = [](int b, int n) {
    uint8_t qs[64];
    for (int i = 0; i < 64; ++i) qs[i] = pat(b, i, 37, 11);
    float d = b ? 0.5f : 1.0f, dmin = b ? 1.0f : 0.5f;
    int sc = pat(b, n / 16, 23, 7);
    return d * static_cast<float>(sc & 15) * static_cast<float>(q2k_bits(qs, n)) - dmin * static_cast<float>(sc >> 4);
  };
  auto x = check_blocks(DType::kQ2_K, fill, want);
  // Element 0: scales[0] = 7 (scale 7, min 0), qs[0] = 11 → bits 3. Element 200: h 1, j 2, p 0, l 8 → qs[40] = 211,
  // bits (211 >> 4) & 3 = 1; scales[12] = 0x1B → scale 11, min 1: 11·1 − 0.5·1.
  EXPECT_EQ(x[0], 21.0f);
  EXPECT_EQ(x[200], 10.5f);
}

TEST(Dequant, Q3_K) {
  // Sixteen 6-bit scales v_k, packed by the rule of docs/design/formats.md#k-quants: low nibble in byte k (k < 8) or
  // the high nibble of byte k − 8, high 2 bits at bit 2·(k/4) of byte 8 + k%4. Signed scale = v_k − 32.
  auto v = [](int b, int k) { return (k * 4 + 3 * b) & 63; };
  auto fill = [&](uint8_t* p, int b) {
    for (int i = 0; i < 32; ++i) p[i] = pat(b, i, 29, 3);        // hmask
    for (int i = 0; i < 64; ++i) p[32 + i] = pat(b, i, 37, 11);  // qs
    uint8_t* sc = p + 96;
    std::memset(sc, 0, 12);
    for (int k = 0; k < 16; ++k) {
      sc[k % 8] = static_cast<uint8_t>(sc[k % 8] | ((v(b, k) & 15) << (k < 8 ? 0 : 4)));
      sc[8 + k % 4] = static_cast<uint8_t>(sc[8 + k % 4] | ((v(b, k) >> 4) << (2 * (k / 4))));
    }
    put_u16(p + 108, b ? kF16MinusHalf : kF16One);
  };
  auto want = [&](int b, int n) {
    uint8_t qs[64];
    for (int i = 0; i < 64; ++i) qs[i] = pat(b, i, 37, 11);
    int h = n / 128, r = n % 128, j = r / 32, p = (r % 32) / 16, l = r % 16;
    int hbit = (pat(b, 16 * p + l, 29, 3) >> (4 * h + j)) & 1;
    float d = b ? -0.5f : 1.0f;
    return d * static_cast<float>(v(b, n / 16) - 32) * static_cast<float>(q2k_bits(qs, n) - (hbit ? 0 : 4));
  };
  auto x = check_blocks(DType::kQ3_K, fill, want);
  // Element 0: scale 0 − 32, qs bits 3, hmask[0] = 3 has bit 0 → q = 3: −96. Element 254: scale v15 = 60 → 28;
  // h 1, j 3, p 1, l 14: qs[62] = 1 → bits 0; hmask[30] = 105 lacks bit 7 → q = −4: −112.
  EXPECT_EQ(x[0], -96.0f);
  EXPECT_EQ(x[254], -112.0f);
}

// The IQ4 table, spelled out (GGUF kvalues_iq4nl).
constexpr int kIq4Levels[16] = {-127, -104, -83, -65, -49, -35, -22, -10, 1, 13, 25, 38, 53, 69, 89, 113};

TEST(Dequant, IQ4_NL) {
  for (int i = 0; i < 16; ++i) EXPECT_EQ(quant_grids::kIq4nlValues[i], kIq4Levels[i]) << i;
  auto x = check_blocks(
      DType::kIQ4_NL,
      [](uint8_t* p, int b) {
        put_u16(p, b ? kF16MinusHalf : kF16One);
        for (int j = 0; j < 16; ++j) p[2 + j] = pat(b, j, 7, 3);
      },
      [](int b, int k) {
        int code = k < 16 ? pat(b, k, 7, 3) & 15 : pat(b, k - 16, 7, 3) >> 4;
        return (b ? -0.5f : 1.0f) * static_cast<float>(kIq4Levels[code]);
      });
  EXPECT_EQ(x[0], -65.0f);  // qs[0] = 3: low nibble 3
  EXPECT_EQ(x[16], -127.0f);
}

TEST(Dequant, IQ4_XS) {
  const int ls[2][8] = {{0, 1, 31, 32, 33, 47, 63, 16}, {40, 20, 5, 60, 32, 12, 50, 33}};
  auto fill = [&](uint8_t* p, int b) {
    put_u16(p, b ? kF16Half : kF16One);
    uint16_t scales_h = 0;
    std::memset(p + 4, 0, 4);
    for (int s = 0; s < 8; ++s) {
      p[4 + s / 2] = static_cast<uint8_t>(p[4 + s / 2] | ((ls[b][s] & 15) << (4 * (s % 2))));
      scales_h = static_cast<uint16_t>(scales_h | ((ls[b][s] >> 4) << (2 * s)));
    }
    put_u16(p + 2, scales_h);
    for (int i = 0; i < 128; ++i) p[8 + i] = pat(b, i, 7, 3);
  };
  auto want = [&](int b, int n) {
    int s = n / 32, k = n % 32;
    int byte = pat(b, 16 * s + k % 16, 7, 3), code = k < 16 ? byte & 15 : byte >> 4;
    return (b ? 0.5f : 1.0f) * static_cast<float>(ls[b][s] - 32) * static_cast<float>(kIq4Levels[code]);
  };
  auto x = check_blocks(DType::kIQ4_XS, fill, want);
  EXPECT_EQ(x[0], 2080.0f);  // ls 0 → −32, code 3 → −65
  EXPECT_EQ(x[96], 0.0f);    // sub-block 3: ls 32 → 0
}

TEST(Dequant, IQ2_XXS) {
  // Sub-block s: grid indices g(l), 7-bit sign indices sg(l) and a 4-bit scale; sub-block 0 of block 0 is all zero.
  auto gi = [](int b, int s, int l) { return b + s == 0 ? l : (s * 31 + l * 7 + 50 * b) & 255; };
  auto sg = [](int b, int s, int l) { return b + s == 0 ? l : (s * 13 + l * 5 + 9 * b) & 127; };
  auto ls = [](int b, int s) { return (2 * s + b) & 15; };
  auto fill = [&](uint8_t* p, int b) {
    put_u16(p, b ? kF16Half : kF16One);
    for (int s = 0; s < 8; ++s) {
      uint32_t w = static_cast<uint32_t>(ls(b, s)) << 28;
      for (int l = 0; l < 4; ++l) {
        p[2 + 8 * s + l] = static_cast<uint8_t>(gi(b, s, l));
        w |= static_cast<uint32_t>(sg(b, s, l)) << (7 * l);
      }
      put_u32(p + 2 + 8 * s + 4, w);
    }
  };
  auto want = [&](int b, int n) {
    int s = n / 32, l = (n % 32) / 8, j = n % 8;
    float dl = (b ? 0.5f : 1.0f) * (0.5f + static_cast<float>(ls(b, s))) * 0.25f;
    return signed_value(dl, grid_byte(quant_grids::kIq2xxs[gi(b, s, l)], j), sign_byte_of_index(sg(b, s, l)), j);
  };
  auto x = check_blocks(DType::kIQ2_XXS, fill, want);
  // Group 0: grid 0 is all 8s, no signs, dl = 0.125. Group 1: grid 1 = {43, 8, ...}, sign index 1 → byte 0x81
  // (odd count → bit 7): elements 8 and 15 negated.
  for (int j = 0; j < 8; ++j) EXPECT_EQ(x[j], 1.0f) << j;
  EXPECT_EQ(x[8], -5.375f);
  EXPECT_EQ(x[9], 1.0f);
  EXPECT_EQ(x[15], -1.0f);
}

TEST(Dequant, IQ2_XS) {
  auto gi = [](int b, int g) { return (g * 37 + 200 * b) & 511; };
  auto sg = [](int b, int g) { return (g * 11 + 3 * b) & 127; };
  auto fill = [&](uint8_t* p, int b) {
    put_u16(p, b ? kF16Half : kF16One);
    for (int g = 0; g < 32; ++g) put_u16(p + 2 + 2 * g, static_cast<uint16_t>(gi(b, g) | (sg(b, g) << 9)));
    for (int s = 0; s < 8; ++s) p[66 + s] = pat(b, s, 23, 7);
  };
  auto want = [&](int b, int n) {
    int g = n / 8, j = n % 8, sc = pat(b, n / 32, 23, 7);
    int ls = (n % 32) < 16 ? sc & 15 : sc >> 4;
    float dl = (b ? 0.5f : 1.0f) * (0.5f + static_cast<float>(ls)) * 0.25f;
    return signed_value(dl, grid_byte(quant_grids::kIq2xs[gi(b, g)], j), sign_byte_of_index(sg(b, g)), j);
  };
  auto x = check_blocks(DType::kIQ2_XS, fill, want);
  EXPECT_EQ(x[0], 15.0f);  // grid 0 (all 8s), no signs, scales[0] = 7 → dl = 1.875
}

TEST(Dequant, IQ2_S) {
  auto fill = [](uint8_t* p, int b) {
    put_u16(p, b ? kF16Half : kF16One);
    for (int g = 0; g < 32; ++g) p[2 + g] = pat(b, g, 37, 0);   // index bits 0..7
    for (int g = 0; g < 32; ++g) p[34 + g] = pat(b, g, 53, 0);  // sign bytes
    for (int s = 0; s < 8; ++s) p[66 + s] = pat(b, s, 29, 0);   // index bits 8..9
    for (int s = 0; s < 8; ++s) p[74 + s] = pat(b, s, 23, 7);   // scales
  };
  auto want = [](int b, int n) {
    int g = n / 8, s = g / 4, l = g % 4, j = n % 8, sc = pat(b, s, 23, 7);
    int index = pat(b, g, 37, 0) | (((pat(b, s, 29, 0) >> (2 * l)) & 3) << 8);
    float dl = (b ? 0.5f : 1.0f) * (0.5f + static_cast<float>(l < 2 ? sc & 15 : sc >> 4)) * 0.25f;
    return signed_value(dl, grid_byte(quant_grids::kIq2s[index], j), pat(b, g, 53, 0), j);
  };
  auto x = check_blocks(DType::kIQ2_S, fill, want);
  EXPECT_EQ(x[0], 15.0f);  // index 0 (qs 0, qh 0): all 8s; sign byte 0; dl = 1.875
}

TEST(Dequant, IQ3_XXS) {
  auto sg = [](int b, int s, int l) { return (s * 13 + l * 5 + 9 * b) & 127; };
  auto ls = [](int b, int s) { return (2 * s + b) & 15; };
  auto fill = [&](uint8_t* p, int b) {
    put_u16(p, b ? kF16Half : kF16One);
    for (int i = 0; i < 64; ++i) p[2 + i] = pat(b, i, 37, 0);
    for (int s = 0; s < 8; ++s) {
      uint32_t w = static_cast<uint32_t>(ls(b, s)) << 28;
      for (int l = 0; l < 4; ++l) w |= static_cast<uint32_t>(sg(b, s, l)) << (7 * l);
      put_u32(p + 66 + 4 * s, w);
    }
  };
  auto want = [&](int b, int n) {
    int s = n / 32, l = (n % 32) / 8, j = n % 8;
    int index = pat(b, 8 * s + 2 * l + j / 4, 37, 0);  // elements 0..3 from the first grid entry, 4..7 the second
    float dl = (b ? 0.5f : 1.0f) * (0.5f + static_cast<float>(ls(b, s))) * 0.5f;
    return signed_value(dl, grid_byte(quant_grids::kIq3xxs[index], j % 4), sign_byte_of_index(sg(b, s, l)), j);
  };
  auto x = check_blocks(DType::kIQ3_XXS, fill, want);
  EXPECT_EQ(x[0], 1.0f);  // grid 0 = {4, 4, 4, 4}, dl = 0.25, sign index 0
}

TEST(Dequant, IQ3_S) {
  auto fill = [](uint8_t* p, int b) {
    put_u16(p, b ? kF16Half : kF16One);
    for (int i = 0; i < 64; ++i) p[2 + i] = pat(b, i, 37, 0);   // index bits 0..7
    for (int s = 0; s < 8; ++s) p[66 + s] = pat(b, s, 29, 0);   // index bit 8
    for (int g = 0; g < 32; ++g) p[74 + g] = pat(b, g, 53, 0);  // sign bytes
    for (int k = 0; k < 4; ++k) p[106 + k] = pat(b, k, 23, 7);  // scale nibbles
  };
  auto want = [](int b, int n) {
    int s = n / 32, g = n / 8, j = n % 8, e = 8 * s + 2 * (g % 4) + j / 4;  // e: grid entry within the block
    int index = pat(b, e, 37, 0) | (((pat(b, s, 29, 0) >> (e % 8)) & 1) << 8);
    int nibble = (pat(b, s / 2, 23, 7) >> (4 * (s % 2))) & 15;
    float dl = (b ? 0.5f : 1.0f) * static_cast<float>(1 + 2 * nibble);
    return signed_value(dl, grid_byte(quant_grids::kIq3s[index], j % 4), pat(b, g, 53, 0), j);
  };
  auto x = check_blocks(DType::kIQ3_S, fill, want);
  EXPECT_EQ(x[0], 15.0f);  // index 0 → {1, 1, 1, 1}, scale nibble 7 → dl = 15
}

// IQ1 grid entries are int8 −1/0/+1 bytes.
int iq1_grid(int index, int j) { return static_cast<int8_t>(grid_byte(quant_grids::kIq1s[index], j)); }

TEST(Dequant, IQ1_S) {
  auto hi = [](int b, int s, int l) { return (s * 3 + l * 5 + b) & 7; };
  auto ls = [](int b, int s) { return (s + 3 * b) & 7; };
  auto neg = [](int b, int s) { return ((s + b) & 1) != 0; };
  auto fill = [&](uint8_t* p, int b) {
    put_u16(p, b ? kF16Half : kF16One);
    for (int g = 0; g < 32; ++g) p[2 + g] = pat(b, g, 37, 0);
    for (int s = 0; s < 8; ++s) {
      int h = (ls(b, s) << 12) | (neg(b, s) ? 0x8000 : 0);
      for (int l = 0; l < 4; ++l) h |= hi(b, s, l) << (3 * l);
      put_u16(p + 34 + 2 * s, static_cast<uint16_t>(h));
    }
  };
  auto want = [&](int b, int n) {
    int g = n / 8, s = g / 4, l = g % 4, j = n % 8;
    float dl = (b ? 0.5f : 1.0f) * static_cast<float>(2 * ls(b, s) + 1), delta = neg(b, s) ? -0.125f : 0.125f;
    return dl * (static_cast<float>(iq1_grid(pat(b, g, 37, 0) | (hi(b, s, l) << 8), j)) + delta);
  };
  auto x = check_blocks(DType::kIQ1_S, fill, want);
  EXPECT_EQ(x[0], -0.875f);  // index 0 (all −1), ls 0 → dl 1, delta +0.125
}

TEST(Dequant, IQ1_M) {
  // d = 0x3A5C (0.794921875) spread over the top nibbles of the four u16 scale words, lowest nibble in word 0.
  const uint16_t d_bits[2] = {0x3A5C, 0xB4E1};
  const float d_val[2] = {0.794921875f, -0.304931640625f};
  auto s3 = [](int b, int s, int half) { return (s * 3 + half * 5 + b) & 7; };  // 3-bit scales
  auto nib = [](int b, int g) { return (g * 5 + 3 * b) & 15; };                 // index bits 8..10 + delta sign
  auto fill = [&](uint8_t* p, int b) {
    for (int g = 0; g < 32; ++g) p[g] = pat(b, g, 37, 0);
    for (int k = 0; k < 16; ++k) p[32 + k] = static_cast<uint8_t>(nib(b, 2 * k) | (nib(b, 2 * k + 1) << 4));
    for (int k = 0; k < 4; ++k) {
      int w = ((d_bits[b] >> (4 * k)) & 15) << 12;
      for (int half = 0; half < 2; ++half)
        w |= (s3(b, 2 * k, half) << (3 * half)) | (s3(b, 2 * k + 1, half) << (6 + 3 * half));
      put_u16(p + 48 + 2 * k, static_cast<uint16_t>(w));
    }
  };
  auto want = [&](int b, int n) {
    int g = n / 8, s = g / 4, l = g % 4, j = n % 8;
    float dl = d_val[b] * static_cast<float>(2 * s3(b, s, l / 2) + 1);
    float delta = nib(b, g) & 8 ? -0.125f : 0.125f;
    return dl * (static_cast<float>(iq1_grid(pat(b, g, 37, 0) | ((nib(b, g) & 7) << 8), j)) + delta);
  };
  auto x = check_blocks(DType::kIQ1_M, fill, want);
  EXPECT_EQ(x[0], -0.794921875f * 0.875f);  // index 0 (all −1), scale 0 → dl = d, delta +0.125
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
  const Case cases[] = {{DType::kF16, 3e-4},  {DType::kBF16, 2.5e-3}, {DType::kF8_E4M3, 0.04}, {DType::kQ8_0, 0.008},
                        {DType::kQ4_0, 0.11}, {DType::kQ4_K, 0.1},    {DType::kQ5_K, 0.05},    {DType::kQ6_K, 0.025}};
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
