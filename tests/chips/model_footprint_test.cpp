// Model footprints against the files themselves: byte totals re-derived here from raw GGUF and safetensors headers
// (own minimal readers, not the loaders), and configs sized by weight_inventory equal to their real checkpoints.
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <cstring>
#include <fstream>
#include <map>

#include "chips/model_footprint.h"
#include "test_paths.h"

namespace cai::chips {
namespace {

// Sum over the tensor-info records of (ne[0] / block elems) × block bytes × ne[1..]:
// docs/design/formats.md#gguf-tensor-infos, docs/design/formats.md#gguf-type-ids.
uint64_t gguf_tensor_bytes(const std::string& path) {
  const std::string f = test::read_file(path);
  size_t pos = 0;
  auto take = [&](size_t n) {
    const size_t at = pos;
    pos += n;
    EXPECT_LE(pos, f.size());
    return at;
  };
  auto u32 = [&] {
    uint32_t v;
    std::memcpy(&v, f.data() + take(4), 4);
    return v;
  };
  auto u64 = [&] {
    uint64_t v;
    std::memcpy(&v, f.data() + take(8), 8);
    return v;
  };
  const std::map<uint32_t, size_t> scalar = {{0, 1}, {1, 1}, {2, 2},  {3, 2},  {4, 4}, {5, 4},
                                             {6, 4}, {7, 1}, {10, 8}, {11, 8}, {12, 8}};
  std::function<void(uint32_t)> skip = [&](uint32_t type) {
    if (type == 8) {
      take(u64());
    } else if (type == 9) {
      const uint32_t elem = u32();
      for (uint64_t i = 0, n = u64(); i < n; ++i) skip(elem);
    } else {
      take(scalar.at(type));
    }
  };
  EXPECT_EQ(f.substr(0, 4), "GGUF");
  take(8);  // magic, version
  const uint64_t n_tensors = u64(), n_kv = u64();
  for (uint64_t i = 0; i < n_kv; ++i) {
    take(u64());
    skip(u32());
  }
  const std::map<uint32_t, std::pair<uint64_t, uint64_t>> blocks = {
      // ggml id → (elements, bytes) per block
      {0, {1, 4}}, {1, {1, 2}}, {30, {1, 2}}, {8, {32, 34}}, {2, {32, 18}}, {12, {256, 144}}, {14, {256, 210}}};
  uint64_t total = 0;
  for (uint64_t i = 0; i < n_tensors; ++i) {
    take(u64());  // name
    const uint32_t n_dims = u32();
    std::vector<uint64_t> ne(n_dims);
    for (uint64_t& d : ne) d = u64();
    const auto [elems, bytes] = blocks.at(u32());
    u64();  // offset
    uint64_t t = ne[0] / elems * bytes;
    for (uint32_t d = 1; d < n_dims; ++d) t *= ne[d];
    total += t;
  }
  return total;
}

// Sum over every header entry of product(shape) × element size (docs/design/formats.md#safetensors), for every
// *.safetensors in `dir`.
uint64_t safetensors_bytes(const std::string& file) {
  const std::string f = test::read_file(file);
  uint64_t n = 0;
  std::memcpy(&n, f.data(), 8);
  const nlohmann::json h = nlohmann::json::parse(f.substr(8, n));
  const std::map<std::string, uint64_t> size = {{"F32", 4}, {"BF16", 2}, {"F16", 2}, {"F8_E4M3", 1}, {"I64", 8}};
  uint64_t total = 0;
  for (const auto& [name, t] : h.items()) {
    if (name == "__metadata__") continue;
    uint64_t elems = 1;
    for (const auto& d : t["shape"]) elems *= d.get<uint64_t>();
    total += elems * size.at(t["dtype"].get<std::string>());
  }
  return total;
}

class GgufFootprint : public ::testing::TestWithParam<std::string> {};

TEST_P(GgufFootprint, WeightBytesAreTheHeaderTensorBytes) {
  const std::string path = test::data_path(GetParam());
  Result<ModelFootprint> fp = load_footprint(path);
  ASSERT_TRUE(fp.ok()) << fp.status().to_string();
  EXPECT_EQ(fp->format, "gguf");
  EXPECT_EQ(fp->weight_bytes() + fp->skipped_bytes, gguf_tensor_bytes(path));
  EXPECT_EQ(fp->skipped_bytes, 0u);
  EXPECT_GT(fp->layers.at(0).attention.bytes, 0u);
}

INSTANTIATE_TEST_SUITE_P(Files, GgufFootprint,
                         ::testing::Values("models/TinyStories-656K-Q8_0.gguf", "models/TinyStories-656K.f16.gguf",
                                           "models/stories260K.gguf", "oracle/deepseek_v3_tiny/mainline.gguf"));

class HfFootprint : public ::testing::TestWithParam<std::string> {};

// The directory's safetensors headers, and its config.json alone (inventory + dtype rules), both give the file total.
TEST_P(HfFootprint, HeadersAndConfigBothGiveTheCheckpointBytes) {
  const std::string dir = test::data_path(GetParam());
  const uint64_t want = safetensors_bytes(dir + "/model.safetensors");
  Result<ModelFootprint> hf = load_footprint(dir);
  ASSERT_TRUE(hf.ok()) << hf.status().to_string();
  EXPECT_EQ(hf->format, "hf");
  EXPECT_EQ(hf->weight_bytes(), want);
  EXPECT_EQ(hf->skipped_bytes, 0u);
  Result<ModelFootprint> cfg = load_footprint(dir + "/config.json");
  ASSERT_TRUE(cfg.ok()) << cfg.status().to_string();
  EXPECT_EQ(cfg->format, "config");
  EXPECT_EQ(cfg->weight_bytes(), want);
  EXPECT_EQ(cfg->params(), hf->params());
  EXPECT_EQ(cfg->fp8_weights, hf->fp8_weights);
  for (size_t l = 0; l < hf->layers.size(); ++l) {
    EXPECT_EQ(cfg->layers[l].attention.bytes, hf->layers[l].attention.bytes) << "layer " << l;
    EXPECT_EQ(cfg->layers[l].experts.bytes, hf->layers[l].experts.bytes) << "layer " << l;
  }
}

INSTANTIATE_TEST_SUITE_P(Dirs, HfFootprint,
                         ::testing::Values("oracle/deepseek_v3_tiny", "oracle/deepseek_v3_tiny/fp8",
                                           "oracle/deepseek_v3_tiny/q_lora_none", "oracle/qwen2_tiny",
                                           "oracle/llama3_scaled_tiny"));

TEST(HfFootprint, TiedTinyStoriesCountsTheStoredHeadOnce) {
  const std::string dir = test::data_path("models/TinyStories-656K-hf");
  Result<ModelFootprint> fp = load_footprint(dir);
  ASSERT_TRUE(fp.ok()) << fp.status().to_string();
  EXPECT_EQ(fp->weight_bytes(), safetensors_bytes(dir + "/model.safetensors"));
}

TEST(HfFootprint, Fp8CheckpointCountsItsBlockScales) {
  Result<ModelFootprint> fp = load_footprint(test::data_path("oracle/deepseek_v3_tiny/fp8"));
  ASSERT_TRUE(fp.ok());
  EXPECT_TRUE(fp->fp8_weights);
  EXPECT_GT(fp->bytes_by_dtype.at("f8_e4m3"), 0u);
  EXPECT_GT(fp->bytes_by_dtype.at("f32"), 0u);  // scale_inv + e_score_correction_bias
}

TEST(Presets, EveryPresetLoads) {
  const std::vector<std::string> names = list_presets(default_preset_dir());
  EXPECT_EQ(names.size(), 8u);
  for (const std::string& n : names) {
    Result<ModelFootprint> fp = load_footprint("preset:" + n);
    EXPECT_TRUE(fp.ok()) << n << ": " << fp.status().to_string();
  }
}

TEST(Presets, UnknownPresetAndBadPathAreErrors) {
  Result<ModelFootprint> a = load_footprint("preset:no-such-model");
  ASSERT_FALSE(a.ok());
  EXPECT_NE(a.status().message().find("deepseek-r1"), std::string::npos);  // lists the known ones
  EXPECT_FALSE(load_footprint("preset:../etc/passwd").ok());
  EXPECT_FALSE(load_footprint("/no/such/model.gguf").ok());
}

}  // namespace
}  // namespace cai::chips
