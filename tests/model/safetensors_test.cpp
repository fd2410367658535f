// safetensors tests: real HF checkpoints (F32, BF16, FP8 + scales), a sharded copy written here, corrupt headers.
#include "model/loaders/safetensors.h"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>
#include <unistd.h>

#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>

#include "core/dtype.h"
#include "model/loaders/gguf.h"
#include "model_test_util.h"
#include "test_paths.h"

namespace cai {
namespace {

using test::load_bytes;

namespace fs = std::filesystem;
using nlohmann::json;
using test::Bytes;

const char* kTinyStories = "models/TinyStories-656K-hf/model.safetensors";

// A safetensors file from header text and buffer; pads the header with spaces to a multiple of 8 when asked.
Bytes st_file(std::string header, const Bytes& buffer, bool pad = true) {
  if (pad) header.resize((header.size() + 7) / 8 * 8, ' ');
  Bytes out(8 + header.size() + buffer.size());
  uint64_t n = header.size();
  std::memcpy(out.data(), &n, 8);
  std::copy(header.begin(), header.end(), out.begin() + 8);
  std::copy(buffer.begin(), buffer.end(), out.begin() + 8 + static_cast<std::ptrdiff_t>(n));
  return out;
}

// Writes `tensors` (taken from a parsed file) as one safetensors file with the given metadata.
void write_shard(const fs::path& path, const std::vector<const SafetensorsTensor*>& tensors, const json& metadata) {
  json header = json::object();
  if (!metadata.empty()) header["__metadata__"] = metadata;
  Bytes buffer;
  for (const SafetensorsTensor* t : tensors) {
    header[t->name] = {
        {"dtype", t->dtype_name}, {"shape", t->shape}, {"data_offsets", {buffer.size(), buffer.size() + t->n_bytes}}};
    buffer.insert(buffer.end(), t->data, t->data + t->n_bytes);
  }
  Bytes file = st_file(header.dump(), buffer);
  std::ofstream(path, std::ios::binary)
      .write(reinterpret_cast<const char*>(file.data()), static_cast<std::streamsize>(file.size()));
}

void write_text(const fs::path& path, const std::string& text) { std::ofstream(path) << text; }

void expect_safetensors_error(const Bytes& b, StatusCode code, std::string_view needle) {
  auto r = SafetensorsFile::parse(b.data(), b.size(), "test.safetensors");
  ASSERT_FALSE(r.ok()) << "expected an error mentioning " << needle;
  EXPECT_EQ(r.status().code(), code) << r.status().to_string();
  EXPECT_NE(r.status().message().find("test.safetensors"), std::string::npos) << r.status().message();
  EXPECT_NE(r.status().message().find(needle), std::string::npos) << r.status().message();
}

TEST(SafetensorsTest, TinyStoriesFile) {
  auto r = SafetensorsFile::open(test::data_path(kTinyStories));
  ASSERT_TRUE(r.ok()) << r.status().to_string();
  const SafetensorsFile& f = **r;
  ASSERT_EQ(f.tensors().size(), 20u);
  EXPECT_EQ(f.metadata().at("format"), "pt");
  EXPECT_EQ(f.metadata().at("model.embed_tokens.weight"), "lm_head.weight");
  for (const SafetensorsTensor& t : f.tensors()) {
    EXPECT_EQ(t.dtype_name, "F32");
    EXPECT_EQ(t.dtype, DType::kF32);
  }
  const SafetensorsTensor* head = f.find("lm_head.weight");
  ASSERT_NE(head, nullptr);
  EXPECT_EQ(head->shape, (std::vector<int64_t>{2048, 128}));
  EXPECT_EQ(head->data, f.mapped()->data() + 2168);  // 8 + header length; first in data order
  EXPECT_EQ(&f.tensors()[0], head);
  const SafetensorsTensor* down = f.find("model.layers.0.mlp.down_proj.weight");
  ASSERT_NE(down, nullptr);
  EXPECT_EQ(down->data, f.mapped()->data() + 2168 + 1049088);
  EXPECT_EQ(down->n_bytes, 128u * 384 * 4);
  auto v = down->view();
  ASSERT_TRUE(v.ok());
  EXPECT_EQ(v->n_dims, 2);
  EXPECT_EQ(v->dim(0), 128);
  EXPECT_EQ(v->dim(1), 384);
  EXPECT_EQ(f.find("model.embed_tokens.weight"), nullptr);  // aliases are a checkpoint-level notion
}

// The F16 GGUF was converted from these F32 weights: ne reversed, same order, each value rounded to f16.
TEST(SafetensorsTest, MatchesF16Gguf) {
  auto st = SafetensorsFile::open(test::data_path(kTinyStories));
  auto gg = GgufFile::open(test::data_path("models/TinyStories-656K.f16.gguf"));
  ASSERT_TRUE(st.ok() && gg.ok());
  for (auto [hf_name, gguf_name] : {std::pair{"model.layers.0.mlp.down_proj.weight", "blk.0.ffn_down.weight"},
                                    std::pair{"lm_head.weight", "token_embd.weight"},
                                    std::pair{"model.layers.1.self_attn.v_proj.weight", "blk.1.attn_v.weight"}}) {
    auto hf = (*st)->find(hf_name)->view();
    ASSERT_TRUE(hf.ok());
    TensorView g = (*gg)->find(gguf_name)->view();
    ASSERT_EQ(hf->shape_string(), g.shape_string()) << hf_name;
    ASSERT_EQ(g.dtype, DType::kF16);
    const float* a = hf->as<float>();
    const uint16_t* b = g.as<uint16_t>();
    int64_t n_diff = 0;
    for (int64_t i = 0; i < g.n_elements(); ++i) n_diff += f32_to_f16(a[i]) != b[i];
    EXPECT_EQ(n_diff, 0) << hf_name;
  }
}

TEST(SafetensorsTest, TinyStoriesCheckpointResolvesTiedAlias) {
  auto r = SafetensorsCheckpoint::open_dir(test::data_path("models/TinyStories-656K-hf"));
  ASSERT_TRUE(r.ok()) << r.status().to_string();
  const SafetensorsCheckpoint& c = **r;
  EXPECT_EQ(c.shards().size(), 1u);
  std::vector<std::string> names = c.names();
  EXPECT_EQ(names.size(), 21u);
  EXPECT_TRUE(std::is_sorted(names.begin(), names.end()));
  const SafetensorsTensor* emb = c.find("model.embed_tokens.weight");
  ASSERT_NE(emb, nullptr);
  EXPECT_EQ(emb, c.find("lm_head.weight"));
  EXPECT_TRUE(c.is_alias("model.embed_tokens.weight"));
  EXPECT_FALSE(c.is_alias("lm_head.weight"));
  EXPECT_EQ(c.find("format"), nullptr);  // ordinary metadata is not an alias
}

TEST(SafetensorsTest, DeepseekTinyBf16) {
  auto r = SafetensorsCheckpoint::open_dir(test::data_path("oracle/deepseek_v3_tiny"));
  ASSERT_TRUE(r.ok()) << r.status().to_string();
  const SafetensorsCheckpoint& c = **r;
  EXPECT_EQ(c.names().size(), 201u);
  int n_bf16 = 0, n_f32 = 0;
  for (const std::string& name : c.names()) {
    const SafetensorsTensor* t = c.find(name);
    n_bf16 += t->dtype == DType::kBF16;
    n_f32 += t->dtype == DType::kF32;
  }
  EXPECT_EQ(n_bf16, 198);
  EXPECT_EQ(n_f32, 3);
  EXPECT_EQ(c.find("lm_head.weight")->shape, (std::vector<int64_t>{512, 128}));
  EXPECT_EQ(c.find("model.layers.1.mlp.gate.e_score_correction_bias")->dtype, DType::kF32);
}

// FP8 weights with 128x128 scales: each dequantized block matches the BF16 original to an e4m3 half-step.
TEST(SafetensorsTest, DeepseekTinyFp8WithScales) {
  auto r = SafetensorsCheckpoint::open_dir(test::data_path("oracle/deepseek_v3_tiny/fp8"));
  auto ref = SafetensorsCheckpoint::open_dir(test::data_path("oracle/deepseek_v3_tiny"));
  ASSERT_TRUE(r.ok() && ref.ok());
  const SafetensorsCheckpoint& c = **r;
  int n_fp8 = 0;
  for (const std::string& name : c.names()) {
    const SafetensorsTensor* w = c.find(name);
    if (w->dtype != DType::kF8_E4M3) continue;
    ++n_fp8;
    const SafetensorsTensor* s = c.find(name + "_scale_inv");
    ASSERT_NE(s, nullptr) << name;
    ASSERT_EQ(s->dtype, DType::kF32);
    ASSERT_EQ(w->shape.size(), 2u);
    const int64_t rows = w->shape[0], cols = w->shape[1], n_bc = (cols + 127) / 128;
    ASSERT_EQ(s->shape, (std::vector<int64_t>{(rows + 127) / 128, n_bc})) << name;
    const SafetensorsTensor* orig = (*ref)->find(name);
    ASSERT_NE(orig, nullptr) << name;
    auto wv = w->view(), sv = s->view(), ov = orig->view();
    ASSERT_TRUE(wv.ok() && sv.ok() && ov.ok());
    std::vector<float> block_max(static_cast<size_t>(s->shape[0] * n_bc), 0.0f);
    for (int64_t i = 0; i < rows; ++i)
      for (int64_t j = 0; j < cols; ++j) {
        float& m = block_max[static_cast<size_t>(i / 128 * n_bc + j / 128)];
        m = std::max(m, std::fabs(bf16_to_f32(ov->as<uint16_t>()[i * cols + j])));
      }
    for (int64_t i = 0; i < rows; ++i)
      for (int64_t j = 0; j < cols; ++j) {
        const size_t blk = static_cast<size_t>(i / 128 * n_bc + j / 128);
        float deq = fp8_e4m3_to_f32(wv->as<uint8_t>()[i * cols + j]) * sv->as<float>()[blk];
        float want = bf16_to_f32(ov->as<uint16_t>()[i * cols + j]);
        ASSERT_LE(std::fabs(deq - want), block_max[blk] * (16.0f / 448.0f) * 1.001f) << name << " " << i << "," << j;
      }
  }
  EXPECT_EQ(n_fp8, 176);
}

class ShardedTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("cai_st_" + std::to_string(::getpid()) + "_" +
                                        ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
    fs::create_directories(dir_);
    auto r = SafetensorsFile::open(test::data_path(kTinyStories));
    ASSERT_TRUE(r.ok());
    src_ = std::move(r).value();
    // Three shards: lm_head alone (with the tied alias in its metadata), then the rest split in two.
    const auto& ts = src_->tensors();
    shards_ = {{&ts[0]}, {}, {}};
    for (size_t i = 1; i < ts.size(); ++i) shards_[i < 10 ? 1 : 2].push_back(&ts[i]);
  }
  void TearDown() override { fs::remove_all(dir_); }

  std::string shard_name(size_t i) const { return "model-0000" + std::to_string(i + 1) + "-of-00003.safetensors"; }

  // Writes the shards and an index; `edit` may change the weight map before it is written.
  void write_all(const std::function<void(json&)>& edit = nullptr) {
    json weight_map = json::object();
    for (size_t i = 0; i < shards_.size(); ++i) {
      json md = {{"format", "pt"}};
      if (i == 0) md["model.embed_tokens.weight"] = "lm_head.weight";
      write_shard(dir_ / shard_name(i), shards_[i], md);
      for (const SafetensorsTensor* t : shards_[i]) weight_map[t->name] = shard_name(i);
    }
    if (edit) edit(weight_map);
    write_text(dir_ / "model.safetensors.index.json",
               json{{"metadata", {{"total_size", 2626168 - 2168}}}, {"weight_map", weight_map}}.dump());
  }

  Status open_status() {
    auto r = SafetensorsCheckpoint::open_dir(dir_.string());
    return r.ok() ? Status() : r.status();
  }

  fs::path dir_;
  std::unique_ptr<SafetensorsFile> src_;
  std::vector<std::vector<const SafetensorsTensor*>> shards_;
};

TEST_F(ShardedTest, OpensAndMatchesTheSingleFile) {
  write_all();
  auto r = SafetensorsCheckpoint::open_dir(dir_.string());
  ASSERT_TRUE(r.ok()) << r.status().to_string();
  const SafetensorsCheckpoint& c = **r;
  EXPECT_EQ(c.shards().size(), 3u);
  EXPECT_EQ(c.names().size(), 21u);
  for (const SafetensorsTensor& t : src_->tensors()) {
    const SafetensorsTensor* s = c.find(t.name);
    ASSERT_NE(s, nullptr) << t.name;
    EXPECT_EQ(s->shape, t.shape);
    ASSERT_EQ(s->n_bytes, t.n_bytes);
    EXPECT_EQ(std::memcmp(s->data, t.data, t.n_bytes), 0) << t.name;
  }
  EXPECT_EQ(c.find("model.embed_tokens.weight"), c.find("lm_head.weight"));
}

TEST_F(ShardedTest, MissingShardIsNamed) {
  write_all([](json& m) { m["model.norm.weight"] = "model-00009-of-00009.safetensors"; });
  Status st = open_status();
  EXPECT_EQ(st.code(), StatusCode::kNotFound);
  EXPECT_NE(st.message().find("model-00009-of-00009.safetensors"), std::string::npos) << st.message();
}

TEST_F(ShardedTest, ListedTensorMissingFromItsShard) {
  write_all([](json& m) { m["model.layers.7.mlp.up_proj.weight"] = "model-00002-of-00003.safetensors"; });
  Status st = open_status();
  EXPECT_EQ(st.code(), StatusCode::kCorrupt);
  EXPECT_NE(st.message().find("'model.layers.7.mlp.up_proj.weight'"), std::string::npos) << st.message();
  // Listed under the wrong shard: also missing from the shard the index names.
  write_all([&](json& m) { m["lm_head.weight"] = shard_name(2); });
  st = open_status();
  EXPECT_NE(st.message().find("'lm_head.weight'"), std::string::npos) << st.message();
}

TEST_F(ShardedTest, BadIndexes) {
  write_all([](json& m) { m["x"] = "../model.safetensors"; });
  EXPECT_NE(open_status().message().find("bad shard file"), std::string::npos);
  write_all([](json& m) { m["x"] = 3; });
  EXPECT_EQ(open_status().code(), StatusCode::kCorrupt);
  write_text(dir_ / "model.safetensors.index.json", "{\"weight_map\": ");
  EXPECT_EQ(open_status().code(), StatusCode::kCorrupt);
  write_text(dir_ / "model.safetensors.index.json", "{\"metadata\": {}}");
  EXPECT_NE(open_status().message().find("weight_map"), std::string::npos);
  // The same tensor stored in two shards.
  shards_[2].push_back(shards_[1][0]);
  write_all();
  EXPECT_NE(open_status().message().find("more than one shard"), std::string::npos) << open_status().message();
}

TEST(SafetensorsTest, EmptyDirIsNotFound) {
  auto r = SafetensorsCheckpoint::open_dir(test::data_path("tokenizer"));
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kNotFound);
}

TEST(SafetensorsTest, EveryHeaderTruncationIsAnError) {
  const Bytes full = load_bytes(kTinyStories);
  ASSERT_TRUE(SafetensorsFile::parse(full.data(), full.size()).ok());
  std::vector<size_t> cuts;
  for (size_t n = 0; n <= 2168; ++n) cuts.push_back(n);
  for (size_t n = 2169; n < full.size(); n += 8191) cuts.push_back(n);
  cuts.push_back(full.size() - 1);
  for (size_t n : cuts) {
    Bytes cut(full.begin(), full.begin() + static_cast<std::ptrdiff_t>(n));
    auto r = SafetensorsFile::parse(cut.data(), cut.size(), "test.safetensors");
    ASSERT_FALSE(r.ok()) << "truncated at " << n;
    EXPECT_EQ(r.status().code(), StatusCode::kCorrupt) << n;
  }
  Bytes longer = full;
  longer.push_back(0);
  expect_safetensors_error(longer, StatusCode::kCorrupt, "tensors cover 2624000 bytes but the buffer has 2624001");
  Bytes b = full;
  uint64_t huge = 200'000'000;
  std::memcpy(b.data(), &huge, 8);
  expect_safetensors_error(b, StatusCode::kCorrupt, "exceeds");
  huge = full.size();
  std::memcpy(b.data(), &huge, 8);
  expect_safetensors_error(b, StatusCode::kCorrupt, "truncated");
}

TEST(SafetensorsTest, BadHeaders) {
  const Bytes four(4, 0);
  const std::string ok_entry = R"("a": {"dtype": "F32", "shape": [1], "data_offsets": [0, 4]})";
  auto bad = [&](const std::string& header, const Bytes& buf, std::string_view needle,
                 StatusCode code = StatusCode::kCorrupt) {
    expect_safetensors_error(st_file(header, buf), code, needle);
  };
  bad("[1, 2]", four, "does not start with '{'");
  bad(" {" + ok_entry + "}", four, "does not start with '{'");
  bad("{" + ok_entry, four, "not valid JSON");
  bad("{\"a\": 1}", four, "entry 'a' is not an object");
  bad(R"({"a": {"dtype": "X9", "shape": [1], "data_offsets": [0, 4]}})", four, "unknown dtype 'X9'",
      StatusCode::kUnsupported);
  bad(R"({"a": {"dtype": "F32", "shape": [-1], "data_offsets": [0, 4]}})", four, "bad dimension -1");
  bad(R"({"a": {"dtype": "F32", "shape": [1.5], "data_offsets": [0, 4]}})", four, "bad dimension");
  bad(R"({"a": {"dtype": "F32", "shape": 1, "data_offsets": [0, 4]}})", four, "no 'shape'");
  bad(R"({"a": {"dtype": "F32", "shape": [1], "data_offsets": [0]}})", four, "data_offsets");
  bad(R"({"a": {"dtype": "F32", "shape": [1], "data_offsets": [4, 0]}})", four, "bad data_offsets");
  bad(R"({"a": {"dtype": "F32", "shape": [2], "data_offsets": [0, 4]}})", four, "needs 8");
  bad(R"({"a": {"dtype": "F32", "shape": [1], "data_offsets": [0, 8]}})", four, "runs past");
  bad(R"({"a": {"dtype": "F32", "shape": [4611686018427387904, 8], "data_offsets": [0, 4]}})", four, "overflows");
  bad(R"({"a": {"dtype": "F4", "shape": [3], "data_offsets": [0, 4]}})", four, "whole bytes");
  bad(R"({"a": {"dtype": "F32", "shape": [1], "data_offsets": [0, 4]},
          "b": {"dtype": "U8", "shape": [2], "data_offsets": [2, 4]}})",
      four, "overlaps");
  bad(R"({"b": {"dtype": "U8", "shape": [2], "data_offsets": [2, 4]}})", four, "2 unused bytes before tensor 'b'");
  bad("{" + ok_entry + ", " + ok_entry + "}", four, "duplicate key 'a'");
  bad(R"({"__metadata__": {"k": 1}})", {}, "'k' is not a string");
  bad(R"({"__metadata__": ["x"]})", {}, "__metadata__ is not an object");
  bad("{\"\xff\": 1}", {}, "not valid JSON");  // invalid UTF-8
}

TEST(SafetensorsTest, OddButValidFiles) {
  // Header of 13 bytes (not padded): tensor data starts at byte 21, misaligned for F32, which we accept.
  Bytes buf = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12};
  const std::string header = R"({"__metadata__": {}, "s": {"dtype": "F32", "shape": [], "data_offsets": [0, 4]},)"
                             R"( "z": {"dtype": "BF16", "shape": [0, 7], "data_offsets": [4, 4]},)"
                             R"( "i": {"dtype": "I64", "shape": [1], "data_offsets": [4, 12]}})";
  Bytes file = st_file(header, buf, /*pad=*/false);
  auto r = SafetensorsFile::parse(file.data(), file.size());
  ASSERT_TRUE(r.ok()) << r.status().to_string();
  const SafetensorsFile& f = **r;
  EXPECT_EQ(f.tensors().size(), 3u);
  const SafetensorsTensor* s = f.find("s");
  ASSERT_NE(s, nullptr);
  EXPECT_EQ(s->data, file.data() + 8 + header.size());
  auto sv = s->view();
  ASSERT_TRUE(sv.ok());
  EXPECT_EQ(sv->n_dims, 0);
  EXPECT_EQ(sv->n_elements(), 1);
  EXPECT_EQ(f.find("z")->n_bytes, 0u);
  const SafetensorsTensor* i = f.find("i");
  EXPECT_EQ(i->dtype_name, "I64");
  EXPECT_FALSE(i->dtype.has_value());
  auto iv = i->view();
  ASSERT_FALSE(iv.ok());
  EXPECT_NE(iv.status().message().find("'i'"), std::string::npos);
  EXPECT_EQ(i->data[0], 5);
}

}  // namespace
}  // namespace cai
