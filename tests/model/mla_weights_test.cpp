// attn_k_b / attn_v_b split from a joint kv_b_proj: equal to mainline llama.cpp's split on the oracle file, an exact
// copy for float dtypes and a block dtype's v rows, block-scaled FP8 kept FP8 (codes and scale grids moved) where its
// blocks align, exact F32 otherwise; a GGUF's attn_kv_b split, or skipped beside a stored split; the MLA head sizes
// read from either key layout.
#include "model/loaders/mla_weights.h"

#include <gtest/gtest.h>

#include <cstring>
#include <random>
#include <set>

#include "core/quant.h"
#include "core/weight_row.h"
#include "model/config.h"
#include "model/loaders/gguf.h"
#include "writers/gguf_writer.h"
#include "model/loaders/safetensors.h"
#include "model_test_util.h"
#include "test_paths.h"

namespace cai {
namespace {

using test::row_f32;

// The head sizes in both metadata layouts: mainline's (one KV head of kv_lora + rope = 40 / kv_lora = 32, the per-head
// 24 / 16 in key_length_mla / value_length_mla) and the older one (key_length / value_length per head, head_count_kv =
// heads) read to the same configuration.
TEST(GgufDeepseek, ConfigReadsMainlineAndOlderMlaKeys) {
  auto file = GgufFile::open(test::data_path("oracle/deepseek_v3_tiny/mainline.gguf"));
  ASSERT_TRUE(file.ok()) << file.status().to_string();
  const nlohmann::json mainline = (*file)->metadata();
  EXPECT_EQ(mainline["deepseek2.attention.key_length"], 40);
  EXPECT_EQ(mainline["deepseek2.attention.key_length_mla"], 24);
  nlohmann::json older = mainline;
  older.erase("deepseek2.attention.key_length_mla");
  older.erase("deepseek2.attention.value_length_mla");
  older["deepseek2.attention.key_length"] = 24;
  older["deepseek2.attention.value_length"] = 16;
  older["deepseek2.attention.head_count_kv"] = 4;
  for (const nlohmann::json& md : {mainline, older}) {
    Result<ModelConfig> c = config_from_gguf(md);
    ASSERT_TRUE(c.ok()) << c.status().to_string();
    EXPECT_EQ(c->kv_lora_rank, 32);
    EXPECT_EQ(c->qk_nope_head_dim, 16);
    EXPECT_EQ(c->qk_rope_head_dim, 8);
    EXPECT_EQ(c->v_head_dim, 16);
    EXPECT_EQ(c->head_dim, 24);
    EXPECT_EQ(c->num_key_value_heads, 4);
  }
}

// tests/data/oracle/deepseek_v3_tiny: 4 layers, 4 heads, nope 16, v 16, kv_lora 32; kv_b_proj BF16, mainline.gguf F32.
// The checkpoint's kv_b_proj split (kept BF16) holds mainline.gguf's attn_k_b / attn_v_b values exactly.
TEST(MlaWeights, SplitCheckpointKvBProjEqualsMainlineKBAndVB) {
  auto file = GgufFile::open(test::data_path("oracle/deepseek_v3_tiny/mainline.gguf"));
  auto ckpt = SafetensorsCheckpoint::open_dir(test::data_path("oracle/deepseek_v3_tiny"));
  ASSERT_TRUE(file.ok()) << file.status().to_string();
  ASSERT_TRUE(ckpt.ok()) << ckpt.status().to_string();
  EXPECT_EQ((*file)->find("blk.0.attn_kv_b.weight"), nullptr);
  for (int layer = 0; layer < 4; ++layer) {
    auto kv_b = (*ckpt)->find("model.layers." + std::to_string(layer) + ".self_attn.kv_b_proj.weight")->view();
    ASSERT_TRUE(kv_b.ok());
    auto split = split_mla_kv_b("blk." + std::to_string(layer) + ".", *kv_b, MlaDims{4, 16, 16});
    ASSERT_TRUE(split.ok()) << split.status().to_string();
    for (const HostTensor& t : *split) {
      const TensorView want = (*file)->find(t.name)->view();
      EXPECT_EQ(t.view.dtype, kv_b->dtype);
      ASSERT_EQ(t.view.shape_string(), want.shape_string()) << t.name;
      const int64_t cols = want.dim(2), rows = want.n_elements() / cols;
      for (int64_t r = 0; r < rows; ++r)
        ASSERT_EQ(row_f32(t.view.reshaped({rows, cols}), r), row_f32(want.reshaped({rows, cols}), r)) << t.name << r;
    }
  }
}

// The bytes of n_f32 F32 zeros.
std::vector<uint8_t> zeros(size_t n_f32) { return std::vector<uint8_t>(n_f32 * 4); }

// kv_b [n_head 2 × (nope 3 + v 2), kv_lora 32] whose values encode their position, in `dtype`.
std::vector<uint8_t> kv_b_bytes(DType dtype) {
  std::vector<float> v;
  for (int64_t r = 0; r < 10; ++r)
    for (int64_t c = 0; c < 32; ++c) v.push_back(static_cast<float>(r * 40 + c) / 64.0f);
  std::vector<uint8_t> b(row_bytes(dtype, 32) * 10);
  for (int64_t r = 0; r < 10; ++r)
    EXPECT_TRUE(quantize_row(dtype, v.data() + r * 32, b.data() + r * row_bytes(dtype, 32), 32).ok());
  return b;
}

// attn_k_b row (h, c) element i is kv_b row (h, i) column c; attn_v_b row (h, i) is kv_b row (h, 3 + i).
void expect_split(DType kv_dtype, DType want_k, DType want_v) {
  std::vector<uint8_t> bytes = kv_b_bytes(kv_dtype);
  const TensorView kv_b = TensorView::make(bytes.data(), kv_dtype, {10, 32});
  auto split = split_mla_kv_b("blk.7.", kv_b, MlaDims{2, 3, 2});
  ASSERT_TRUE(split.ok()) << split.status().to_string();
  const HostTensor &k = (*split)[0], &v = (*split)[1];
  EXPECT_EQ(k.name, "blk.7.attn_k_b.weight");
  EXPECT_EQ(v.name, "blk.7.attn_v_b.weight");
  EXPECT_EQ(k.view.dtype, want_k);
  EXPECT_EQ(v.view.dtype, want_v);
  ASSERT_EQ(k.view.shape_string(), "[2, 32, 3]");
  ASSERT_EQ(v.view.shape_string(), "[2, 2, 32]");
  const TensorView k2 = k.view.reshaped({64, 3}), v2 = v.view.reshaped({4, 32});
  for (int64_t h = 0; h < 2; ++h) {
    for (int64_t c = 0; c < 32; ++c)
      for (int64_t i = 0; i < 3; ++i)
        ASSERT_EQ(row_f32(k2, h * 32 + c)[static_cast<size_t>(i)], row_f32(kv_b, h * 5 + i)[static_cast<size_t>(c)]);
    for (int64_t i = 0; i < 2; ++i) ASSERT_EQ(row_f32(v2, h * 2 + i), row_f32(kv_b, h * 5 + 3 + i)) << h << "," << i;
  }
  if (want_v == kv_dtype) {  // the v rows are the same bytes
    for (int64_t r = 0; r < 4; ++r)
      EXPECT_EQ(std::memcmp(v2.row<const uint8_t>(r), kv_b.row<const uint8_t>(r / 2 * 5 + 3 + r % 2),
                            row_bytes(kv_dtype, 32)),
                0);
  }
}

TEST(MlaWeights, FloatDtypesAreCopiedExactly) {
  expect_split(DType::kF16, DType::kF16, DType::kF16);
  expect_split(DType::kBF16, DType::kBF16, DType::kBF16);
}

TEST(MlaWeights, BlockDtypesKeepTheirVRowsAndDequantizeK) { expect_split(DType::kQ8_0, DType::kF32, DType::kQ8_0); }

// A block-scaled FP8 kv_b [n_head 2 × (nope + v), kv_lora] of random e4m3 codes (no NaN) with random block scales,
// split: each attn_k_b / attn_v_b element decodes to the same value as its kv_b element. Where nope, v and kv_lora
// are whole 128-element blocks both stay FP8 (attn_v_b's rows are kv_b's bytes), else both are exact F32.
void expect_fp8_split(const MlaDims& d, int64_t lora, DType want) {
  const int64_t rows = d.n_head * (d.qk_nope + d.v_head_dim);
  std::mt19937 rng(5);
  std::vector<uint8_t> codes(static_cast<size_t>(rows * lora));
  for (uint8_t& c : codes) {
    c = static_cast<uint8_t>(rng());
    if ((c & 0x7F) == 0x7F) c ^= 1;  // 0x7F / 0xFF are e4m3's NaNs
  }
  std::vector<float> scales(static_cast<size_t>((rows + 127) / 128 * ((lora + 127) / 128)));
  std::uniform_real_distribution<float> scale(0.001f, 0.01f);
  for (float& x : scales) x = scale(rng);
  TensorView kv_b = TensorView::make(codes.data(), DType::kF8_E4M3, {rows, lora});
  kv_b.scale = scales.data();
  auto split = split_mla_kv_b("blk.3.", kv_b, d);
  ASSERT_TRUE(split.ok()) << split.status().to_string();
  const HostTensor &k = (*split)[0], &v = (*split)[1];
  ASSERT_EQ(k.view.dtype, want);
  ASSERT_EQ(v.view.dtype, want);
  EXPECT_EQ(k.view.scale != nullptr, want == DType::kF8_E4M3);
  EXPECT_EQ(v.view.scale != nullptr, want == DType::kF8_E4M3);
  const int64_t per_head = d.qk_nope + d.v_head_dim;
  const TensorView k2 = k.view.reshaped({d.n_head * lora, d.qk_nope});
  const TensorView v2 = v.view.reshaped({d.n_head * d.v_head_dim, lora});
  for (int64_t h = 0; h < d.n_head; ++h) {
    for (int64_t i = 0; i < d.qk_nope; ++i) {
      const std::vector<float> want_row = row_f32(kv_b, h * per_head + i);
      for (int64_t c = 0; c < lora; ++c)
        ASSERT_EQ(row_f32(k2, h * lora + c)[static_cast<size_t>(i)], want_row[static_cast<size_t>(c)]) << h << "," << i;
    }
    for (int64_t i = 0; i < d.v_head_dim; ++i) {
      ASSERT_EQ(row_f32(v2, h * d.v_head_dim + i), row_f32(kv_b, h * per_head + d.qk_nope + i)) << h << "," << i;
      if (want == DType::kF8_E4M3) {
        ASSERT_EQ(std::memcmp(v2.row<const uint8_t>(h * d.v_head_dim + i),
                              kv_b.row<const uint8_t>(h * per_head + d.qk_nope + i), static_cast<size_t>(lora)),
                  0);
      }
    }
  }
}

TEST(MlaWeights, BlockScaledFp8StaysFp8WhereItsBlocksAlign) {
  expect_fp8_split(MlaDims{2, 128, 128}, 256, DType::kF8_E4M3);  // R1's head sizes, two heads, kv_lora 256
}

TEST(MlaWeights, BlockScaledFp8IsExactF32WhereItsBlocksDoNotAlign) {
  expect_fp8_split(MlaDims{2, 64, 128}, 256, DType::kF32);   // nope cuts a block
  expect_fp8_split(MlaDims{2, 128, 128}, 192, DType::kF32);  // so does kv_lora
}

TEST(MlaWeights, WrongKvBShapeIsAnError) {
  std::vector<uint8_t> bytes = kv_b_bytes(DType::kF32);
  auto r = split_mla_kv_b("blk.0.", TensorView::make(bytes.data(), DType::kF32, {10, 32}), MlaDims{3, 3, 2});
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("blk.0.attn_kv_b.weight"), std::string::npos) << r.status().message();
}

// A GGUF with layer 0 stored split and joint (ik_llama.cpp), layer 1 joint only: layer 0's attn_kv_b is skipped,
// layer 1's split.
TEST(MlaWeights, GgufJointKvBIsSplitOrSkipped) {
  GgufWriter w;
  w.set_string("general.architecture", "deepseek2");
  ASSERT_TRUE(w.add_tensor("blk.0.attn_kv_b.weight", DType::kF16, {10, 32}, kv_b_bytes(DType::kF16)).ok());
  ASSERT_TRUE(w.add_tensor("blk.0.attn_k_b.weight", DType::kF32, {2, 32, 3}, zeros(2 * 32 * 3)).ok());
  ASSERT_TRUE(w.add_tensor("blk.0.attn_v_b.weight", DType::kF32, {2, 2, 32}, zeros(2 * 2 * 32)).ok());
  ASSERT_TRUE(w.add_tensor("blk.1.attn_kv_b.weight", DType::kF16, {10, 32}, kv_b_bytes(DType::kF16)).ok());
  const std::string path = test::make_temp_dir("kv_b") + "/m.gguf";
  ASSERT_TRUE(w.write(path).ok());
  auto file = GgufFile::open(path);
  ASSERT_TRUE(file.ok()) << file.status().to_string();
  std::set<std::string> skipped;
  const MlaDims dims{2, 3, 2};
  auto split = split_gguf_mla_kv_b(**file, &dims, &skipped);
  ASSERT_TRUE(split.ok()) << split.status().to_string();
  ASSERT_EQ(split->size(), 2u);
  EXPECT_EQ((*split)[0].name, "blk.1.attn_k_b.weight");
  EXPECT_EQ((*split)[1].name, "blk.1.attn_v_b.weight");
  EXPECT_EQ(skipped, (std::set<std::string>{"blk.0.attn_kv_b.weight", "blk.1.attn_kv_b.weight"}));
  skipped.clear();
  auto no_dims = split_gguf_mla_kv_b(**file, nullptr, &skipped);
  ASSERT_FALSE(no_dims.ok());
  EXPECT_NE(no_dims.status().message().find("blk.1.attn_kv_b.weight"), std::string::npos) << no_dims.status().message();
}

TEST(MlaWeights, KBWithoutVBIsAnError) {
  GgufWriter w;
  ASSERT_TRUE(w.add_tensor("blk.2.attn_k_b.weight", DType::kF32, {2, 32, 3}, zeros(2 * 32 * 3)).ok());
  const std::string path = test::make_temp_dir("kv_b") + "/m.gguf";
  ASSERT_TRUE(w.write(path).ok());
  auto file = GgufFile::open(path);
  ASSERT_TRUE(file.ok());
  std::set<std::string> skipped;
  auto r = split_gguf_mla_kv_b(**file, nullptr, &skipped);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("blk.2.attn_v_b.weight"), std::string::npos) << r.status().message();
}

}  // namespace
}  // namespace cai
