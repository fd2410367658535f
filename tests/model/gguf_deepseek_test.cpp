// attn_kv_b rebuilt from mainline llama.cpp's attn_k_b / attn_v_b: equal to the checkpoint's kv_b_proj on the oracle
// file, an exact copy for matching float dtypes, exact F32 otherwise; the MLA head sizes read from either key layout.
#include "model/loaders/gguf_deepseek.h"

#include <gtest/gtest.h>

#include <cstring>
#include <set>

#include "core/weight_row.h"
#include "model/config.h"
#include "model/loaders/gguf.h"
#include "model/loaders/gguf_writer.h"
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

// tests/data/oracle/deepseek_v3_tiny/mainline.gguf: 4 layers, 4 heads, nope 16, v 16, kv_lora 32, all F32.
TEST(GgufDeepseek, MainlineKvBEqualsTheCheckpointsKvBProj) {
  auto file = GgufFile::open(test::data_path("oracle/deepseek_v3_tiny/mainline.gguf"));
  auto ckpt = SafetensorsCheckpoint::open_dir(test::data_path("oracle/deepseek_v3_tiny"));
  ASSERT_TRUE(file.ok()) << file.status().to_string();
  ASSERT_TRUE(ckpt.ok()) << ckpt.status().to_string();
  EXPECT_EQ((*file)->find("blk.0.attn_kv_b.weight"), nullptr);
  std::set<std::string> replaced;
  auto rebuilt = rebuild_mla_kv_b(**file, &replaced);
  ASSERT_TRUE(rebuilt.ok()) << rebuilt.status().to_string();
  ASSERT_EQ(rebuilt->size(), 4u);
  EXPECT_EQ(replaced.size(), 8u);
  EXPECT_TRUE(replaced.count("blk.3.attn_k_b.weight") && replaced.count("blk.3.attn_v_b.weight"));
  for (const HostTensor& t : *rebuilt) {
    const std::string layer = t.name.substr(4, t.name.find('.', 4) - 4);
    auto want = (*ckpt)->find("model.layers." + layer + ".self_attn.kv_b_proj.weight")->view();
    ASSERT_TRUE(want.ok());
    EXPECT_EQ(t.view.dtype, DType::kF32);
    ASSERT_EQ(t.view.shape_string(), "[128, 32]") << t.name;
    ASSERT_EQ(want->shape_string(), "[128, 32]");
    for (int64_t r = 0; r < 128; ++r) ASSERT_EQ(row_f32(t.view, r), row_f32(*want, r)) << t.name << " row " << r;
  }
}

// k_b [n_head 2, kv_lora 32, nope 3] and v_b [2, v 2, 32] with element values that encode their kv_b position.
Result<std::unique_ptr<GgufFile>> write_k_b_v_b(const std::string& path, DType k_dtype, DType v_dtype) {
  auto kv_b_value = [](int64_t h, int64_t row, int64_t col) { return static_cast<float>(h * 1000 + row * 40 + col); };
  auto encode = [](DType t, const std::vector<float>& v) {
    std::vector<uint8_t> b(v.size() * row_bytes(t, 1));
    for (size_t i = 0; i < v.size(); ++i) {
      if (t == DType::kF32) std::memcpy(b.data() + 4 * i, &v[i], 4);
      else { const uint16_t h = f32_to_f16(v[i]); std::memcpy(b.data() + 2 * i, &h, 2); }
    }
    return b;
  };
  std::vector<float> k, v;
  for (int64_t h = 0; h < 2; ++h)
    for (int64_t j = 0; j < 32; ++j)
      for (int64_t i = 0; i < 3; ++i) k.push_back(kv_b_value(h, i, j));  // transposed: k_b[h][j][i] = kv_b row i, col j
  for (int64_t h = 0; h < 2; ++h)
    for (int64_t i = 0; i < 2; ++i)
      for (int64_t j = 0; j < 32; ++j) v.push_back(kv_b_value(h, 3 + i, j));
  GgufWriter w;
  w.set_string("general.architecture", "deepseek2");
  CAI_TRY(w.add_tensor("blk.0.attn_k_b.weight", k_dtype, {2, 32, 3}, encode(k_dtype, k)));
  CAI_TRY(w.add_tensor("blk.0.attn_v_b.weight", v_dtype, {2, 2, 32}, encode(v_dtype, v)));
  CAI_TRY(w.write(path));
  return GgufFile::open(path);
}

void expect_rebuilt(DType k_dtype, DType v_dtype, DType want_dtype) {
  auto file = write_k_b_v_b(test::make_temp_dir("kv_b") + "/m.gguf", k_dtype, v_dtype);
  ASSERT_TRUE(file.ok()) << file.status().to_string();
  std::set<std::string> replaced;
  auto rebuilt = rebuild_mla_kv_b(**file, &replaced);
  ASSERT_TRUE(rebuilt.ok()) << rebuilt.status().to_string();
  ASSERT_EQ(rebuilt->size(), 1u);
  const TensorView& kv_b = (*rebuilt)[0].view;
  EXPECT_EQ((*rebuilt)[0].name, "blk.0.attn_kv_b.weight");
  EXPECT_EQ(kv_b.dtype, want_dtype);
  ASSERT_EQ(kv_b.shape_string(), "[10, 32]");  // n_head × (nope 3 + v 2) rows of kv_lora
  for (int64_t r = 0; r < 10; ++r) {
    const std::vector<float> got = row_f32(kv_b, r);
    for (int64_t c = 0; c < 32; ++c) ASSERT_EQ(got[static_cast<size_t>(c)], (r / 5) * 1000 + (r % 5) * 40 + c) << r << "," << c;
  }
}

TEST(GgufDeepseek, SameFloatDtypeIsCopiedExactly) { expect_rebuilt(DType::kF16, DType::kF16, DType::kF16); }

TEST(GgufDeepseek, MixedDtypesAreDequantizedToF32) { expect_rebuilt(DType::kF16, DType::kF32, DType::kF32); }

TEST(GgufDeepseek, KBWithoutVBIsAnError) {
  GgufWriter w;
  ASSERT_TRUE(w.add_tensor("blk.2.attn_k_b.weight", DType::kF32, {2, 32, 3}, std::vector<uint8_t>(2 * 32 * 3 * 4)).ok());
  const std::string path = test::make_temp_dir("kv_b") + "/m.gguf";
  ASSERT_TRUE(w.write(path).ok());
  auto file = GgufFile::open(path);
  ASSERT_TRUE(file.ok());
  std::set<std::string> replaced;
  auto r = rebuild_mla_kv_b(**file, &replaced);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("blk.2.attn_v_b.weight"), std::string::npos) << r.status().message();
}

}  // namespace
}  // namespace cai
