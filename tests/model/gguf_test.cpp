// GGUF reader tests: the real test models and vocab files, hand-built files, and corrupted copies of real bytes.
#include "model/loaders/gguf.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <limits>
#include <string_view>

#include "model_test_util.h"
#include "test_paths.h"

namespace cai {
namespace {

using test::load_bytes;

using test::Bytes;

Result<std::unique_ptr<GgufFile>> parse_bytes(const Bytes& b) {
  return GgufFile::parse(b.data(), b.size(), "test.gguf");
}

template <class T>
void put(Bytes& b, size_t off, T v) {
  ASSERT_LE(off + sizeof(T), b.size());
  std::memcpy(b.data() + off, &v, sizeof(T));
}

template <class T>
T get(const Bytes& b, size_t off) {
  T v{};
  std::memcpy(&v, b.data() + off, sizeof(T));
  return v;
}

// Offset of the record that starts with the GGUF string `s` (u64 length + bytes): a metadata key or tensor name.
size_t find_record(const Bytes& b, std::string_view s) {
  Bytes needle(8);
  uint64_t n = s.size();
  std::memcpy(needle.data(), &n, 8);
  needle.insert(needle.end(), s.begin(), s.end());
  auto it = std::search(b.begin(), b.end(), needle.begin(), needle.end());
  EXPECT_NE(it, b.end()) << s;
  return static_cast<size_t>(it - b.begin());
}

// Where the tensor-info fields of `name` (with `n_dims` dims) live.
struct InfoFields {
  size_t n_dims, ne0, type, offset;
};
InfoFields info_fields(const Bytes& b, std::string_view name, size_t n_dims) {
  size_t at = find_record(b, name) + 8 + name.size();
  return {at, at + 4, at + 4 + 8 * n_dims, at + 4 + 8 * n_dims + 4};
}

// Expect parsing to fail with `code` and a message naming the source and containing `needle`.
void expect_gguf_error(const Bytes& b, StatusCode code, std::string_view needle) {
  auto r = parse_bytes(b);
  ASSERT_FALSE(r.ok()) << "expected an error mentioning " << needle;
  EXPECT_EQ(r.status().code(), code) << r.status().to_string();
  EXPECT_NE(r.status().message().find("test.gguf"), std::string::npos) << r.status().message();
  EXPECT_NE(r.status().message().find(needle), std::string::npos) << r.status().message();
}

TEST(GgufTest, Stories260K) {
  const std::string path = test::data_path("models/stories260K.gguf");
  auto r = GgufFile::open(path);
  ASSERT_TRUE(r.ok()) << r.status().to_string();
  const GgufFile& f = **r;
  EXPECT_EQ(f.version(), 3u);
  EXPECT_EQ(f.source_name(), path);
  EXPECT_EQ(f.alignment(), 32u);
  EXPECT_EQ(f.data_offset(), 14176u);
  EXPECT_EQ(f.metadata().size(), 19u);
  EXPECT_EQ(f.metadata().at("general.architecture"), "llama");
  EXPECT_TRUE(f.metadata().at("llama.embedding_length").is_number_unsigned());
  EXPECT_EQ(f.metadata().at("llama.embedding_length").get<uint64_t>(), 64u);
  EXPECT_EQ(f.metadata().at("llama.feed_forward_length").get<uint64_t>(), 172u);
  EXPECT_EQ(f.metadata().at("tokenizer.ggml.seperator_token_id").get<uint64_t>(), 4294967295u);
  EXPECT_EQ(f.metadata().at("llama.attention.layer_norm_rms_epsilon").get<float>(), 1e-5f);
  const auto& tokens = f.metadata().at("tokenizer.ggml.tokens");
  ASSERT_EQ(tokens.size(), 512u);
  EXPECT_EQ(tokens[1], "<s>");
  EXPECT_EQ(tokens[3], "<0x00>");
  EXPECT_EQ(tokens[258], "<0xFF>");
  EXPECT_TRUE(f.metadata().at("tokenizer.ggml.scores")[300].is_number_float());

  ASSERT_EQ(f.tensors().size(), 48u);
  Bytes bytes = load_bytes("models/stories260K.gguf");
  size_t end = 0;
  for (const GgufTensorInfo& t : f.tensors()) {
    EXPECT_EQ(t.dtype, DType::kF32) << t.name;
    EXPECT_EQ(t.offset % 32, 0u);
    EXPECT_EQ(std::memcmp(t.data, bytes.data() + 14176 + t.offset, t.n_bytes), 0) << t.name;
    end = std::max<size_t>(end, 14176 + t.offset + t.n_bytes);
  }
  EXPECT_EQ(end, bytes.size());  // the last tensor ends exactly at the end of the file

  const GgufTensorInfo* down = f.find("blk.0.ffn_down.weight");
  ASSERT_NE(down, nullptr);
  EXPECT_EQ(down->ne, (std::vector<int64_t>{172, 64}));
  EXPECT_EQ(down->n_bytes, 172u * 64 * 4);
  TensorView v = down->view();
  EXPECT_EQ(v.n_dims, 2);
  EXPECT_EQ(v.dim(0), 64);  // [out, in] = reversed ne
  EXPECT_EQ(v.dim(1), 172);
  EXPECT_EQ(v.dtype, DType::kF32);
  EXPECT_EQ(v.data, down->data);
  EXPECT_EQ(f.find("token_embd.weight")->offset, 0u);
  EXPECT_EQ(f.find("output.weight")->offset, 131328u);
  EXPECT_EQ(f.find("output_norm.weight")->view().n_dims, 1);
  EXPECT_EQ(f.find("nope"), nullptr);
}

TEST(GgufTest, TinyStoriesQ8_0) {
  auto r = GgufFile::open(test::data_path("models/TinyStories-656K-Q8_0.gguf"));
  ASSERT_TRUE(r.ok()) << r.status().to_string();
  const GgufFile& f = **r;
  EXPECT_EQ(f.metadata().size(), 34u);
  EXPECT_EQ(f.data_offset(), 50848u);
  EXPECT_EQ(f.metadata().at("general.file_type").get<uint64_t>(), 7u);
  EXPECT_EQ(f.metadata().at("tokenizer.ggml.add_bos_token"), true);
  EXPECT_EQ(f.metadata().at("tokenizer.ggml.add_eos_token"), false);
  EXPECT_EQ(f.metadata().at("general.languages"), nlohmann::json::array({"en"}));
  ASSERT_EQ(f.tensors().size(), 20u);
  int n_q8 = static_cast<int>(std::count_if(f.tensors().begin(), f.tensors().end(),
                                            [](const GgufTensorInfo& t) { return t.dtype == DType::kQ8_0; }));
  EXPECT_EQ(n_q8, 15);
  EXPECT_EQ(f.find("output.weight"), nullptr);  // tied to token_embd
  const GgufTensorInfo* emb = f.find("token_embd.weight");
  ASSERT_NE(emb, nullptr);
  EXPECT_EQ(emb->dtype, DType::kQ8_0);
  EXPECT_EQ(emb->offset, 512u);
  EXPECT_EQ(emb->n_bytes, 2048u * 4 * 34);  // 4 blocks of 34 bytes per 128-wide row
  EXPECT_EQ(emb->view().row_bytes(), 4u * 34);
  const GgufTensorInfo* up = f.find("blk.1.ffn_up.weight");
  ASSERT_NE(up, nullptr);
  EXPECT_EQ(f.data_offset() + up->offset + up->n_bytes, 749728u);
}

TEST(GgufTest, TinyStoriesF16) {
  auto r = GgufFile::open(test::data_path("models/TinyStories-656K.f16.gguf"));
  ASSERT_TRUE(r.ok()) << r.status().to_string();
  const GgufFile& f = **r;
  EXPECT_EQ(f.metadata().size(), 32u);
  EXPECT_EQ(f.data_offset(), 50784u);  // infos end at 50762, aligned up to 32
  EXPECT_EQ(f.metadata().at("general.file_type").get<uint64_t>(), 1u);
  ASSERT_EQ(f.tensors().size(), 20u);
  EXPECT_EQ(f.tensors()[0].name, "token_embd.weight");
  EXPECT_EQ(f.tensors()[0].dtype, DType::kF16);
  EXPECT_EQ(f.find("blk.0.ffn_down.weight")->ne, (std::vector<int64_t>{384, 128}));
  const GgufTensorInfo* last = f.find("output_norm.weight");
  EXPECT_EQ(f.data_offset() + last->offset + last->n_bytes, 1364064u);
}

struct VocabCase {
  const char* file;
  size_t n_kv;
  size_t n_tokens;
  size_t n_merges;  // 0 = no merges key
};

class GgufVocabTest : public ::testing::TestWithParam<VocabCase> {};

TEST_P(GgufVocabTest, VocabOnlyFile) {
  const VocabCase& c = GetParam();
  auto r = GgufFile::open(test::data_path(std::string("tokenizer/gguf-vocab/") + c.file));
  ASSERT_TRUE(r.ok()) << r.status().to_string();
  const GgufFile& f = **r;
  EXPECT_TRUE(f.tensors().empty());
  EXPECT_EQ(f.metadata().size(), c.n_kv);
  EXPECT_EQ(f.metadata().at("tokenizer.ggml.tokens").size(), c.n_tokens);
  if (c.n_merges) {
    EXPECT_EQ(f.metadata().at("tokenizer.ggml.merges").size(), c.n_merges);
  }
  const auto& types = f.metadata().at("tokenizer.ggml.token_type");
  ASSERT_EQ(types.size(), c.n_tokens);
  EXPECT_TRUE(types[0].is_number_integer() && !types[0].is_number_unsigned());  // an i32 array
}

INSTANTIATE_TEST_SUITE_P(Files, GgufVocabTest,
                         ::testing::Values(VocabCase{"ggml-vocab-deepseek-coder.gguf", 25, 32256, 31757},
                                           VocabCase{"ggml-vocab-deepseek-llm.gguf", 23, 102400, 99757},
                                           VocabCase{"ggml-vocab-gpt-2.gguf", 16, 50257, 50000},
                                           VocabCase{"ggml-vocab-llama-spm.gguf", 22, 32000, 0},
                                           VocabCase{"ggml-vocab-phi-3.gguf", 26, 32064, 0}));

TEST(GgufTest, MissingFileIsNotFound) {
  auto r = GgufFile::open(test::data_path("models/no-such.gguf"));
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kNotFound);
  EXPECT_NE(r.status().message().find("no-such.gguf"), std::string::npos);
  EXPECT_FALSE(GgufFile::open(test::data_path("models")).ok());  // a directory
}

TEST(GgufTest, EveryTruncationIsAnError) {
  Bytes full = load_bytes("models/stories260K.gguf");
  ASSERT_TRUE(parse_bytes(full).ok());
  std::vector<size_t> cuts;
  for (size_t n = 0; n < 14176; ++n) cuts.push_back(n);  // every byte of header, metadata and tensor infos
  for (size_t n = 14176; n < full.size(); n += 4099) cuts.push_back(n);
  cuts.push_back(full.size() - 1);
  for (size_t n : cuts) {
    Bytes cut(full.begin(), full.begin() + static_cast<std::ptrdiff_t>(n));  // exact size: overreads would show
    auto r = parse_bytes(cut);
    ASSERT_FALSE(r.ok()) << "truncated at " << n;
    EXPECT_EQ(r.status().code(), StatusCode::kCorrupt) << n;
    ASSERT_NE(r.status().message().find("test.gguf"), std::string::npos) << r.status().message();
  }
}

TEST(GgufTest, VersionsAndMagic) {
  Bytes b = load_bytes("models/TinyStories-656K-Q8_0.gguf");
  put<uint32_t>(b, 4, 2);
  EXPECT_TRUE(parse_bytes(b).ok());  // v2 has the same layout
  put<uint32_t>(b, 4, 1);
  expect_gguf_error(b, StatusCode::kUnsupported, "v1");
  put<uint32_t>(b, 4, 0x03000000);
  expect_gguf_error(b, StatusCode::kUnsupported, "byte-swapped");
  put<uint32_t>(b, 4, 4);
  expect_gguf_error(b, StatusCode::kUnsupported, "version 4");
  put<uint32_t>(b, 4, 3);
  b[0] = 'X';
  expect_gguf_error(b, StatusCode::kCorrupt, "magic");
}

TEST(GgufTest, BadTensorInfos) {
  const Bytes orig = load_bytes("models/TinyStories-656K-Q8_0.gguf");
  const InfoFields emb = info_fields(orig, "token_embd.weight", 2);
  ASSERT_EQ(get<uint32_t>(orig, emb.type), 8u);  // Q8_0
  ASSERT_EQ(get<uint64_t>(orig, emb.offset), 512u);
  Bytes b = orig;
  put<uint32_t>(b, emb.type, 99);
  expect_gguf_error(b, StatusCode::kUnsupported, "'token_embd.weight' has unknown or unsupported ggml type id 99");
  b = orig;
  put<uint32_t>(b, emb.n_dims, 5);
  expect_gguf_error(b, StatusCode::kCorrupt, "5 dimensions");
  b = orig;
  put<uint64_t>(b, emb.ne0, 100);
  expect_gguf_error(b, StatusCode::kCorrupt, "not a multiple of the q8_0 block size 32");
  b = orig;
  put<uint64_t>(b, emb.offset, 513);
  expect_gguf_error(b, StatusCode::kCorrupt, "not a multiple of the alignment 32");
  b = orig;
  put<uint64_t>(b, emb.offset, uint64_t{1} << 40);
  expect_gguf_error(b, StatusCode::kCorrupt, "runs past the end");
  b = orig;
  put<uint64_t>(b, emb.offset, std::numeric_limits<uint64_t>::max() - 31);  // offset + size would wrap
  expect_gguf_error(b, StatusCode::kCorrupt, "runs past the end");
  b = orig;
  put<uint64_t>(b, emb.ne0 + 8, uint64_t{1} << 62);  // ne[1]: the byte size overflows
  expect_gguf_error(b, StatusCode::kCorrupt, "overflows");
  b = orig;
  size_t k_name = find_record(b, "blk.0.attn_k.weight") + 8;
  b[k_name + std::string_view("blk.0.attn_").size()] = 'q';
  expect_gguf_error(b, StatusCode::kCorrupt, "duplicate tensor name 'blk.0.attn_q.weight'");
}

TEST(GgufTest, HugeCountsFailBeforeAllocating) {
  const Bytes orig = load_bytes("models/TinyStories-656K-Q8_0.gguf");
  Bytes b = orig;
  put<uint64_t>(b, 8, uint64_t{1} << 60);
  expect_gguf_error(b, StatusCode::kCorrupt, "tensor count");
  b = orig;
  put<uint64_t>(b, 16, uint64_t{1} << 60);
  expect_gguf_error(b, StatusCode::kCorrupt, "metadata count");
  b = orig;
  put<uint64_t>(b, 24, uint64_t{1} << 50);  // the first key's length
  expect_gguf_error(b, StatusCode::kCorrupt, "metadata key");
  b = orig;
  const size_t tokens = find_record(b, "tokenizer.ggml.tokens") + 8 + 21;  // value type, elem type, count
  ASSERT_EQ(get<uint32_t>(b, tokens), 9u);
  ASSERT_EQ(get<uint64_t>(b, tokens + 8), 2048u);
  put<uint64_t>(b, tokens + 8, uint64_t{1} << 62);
  expect_gguf_error(b, StatusCode::kCorrupt, "'tokenizer.ggml.tokens': array of 4611686018427387904 elements");
  b = orig;
  put<uint64_t>(b, tokens + 16, uint64_t{1} << 40);  // the first token's length
  expect_gguf_error(b, StatusCode::kCorrupt, "tokenizer.ggml.tokens");
}

TEST(GgufTest, BadValueTypes) {
  const Bytes orig = load_bytes("models/TinyStories-656K-Q8_0.gguf");
  Bytes b = orig;
  put<uint32_t>(b, 24 + 8 + 20, 13);  // general.architecture's value type
  expect_gguf_error(b, StatusCode::kCorrupt, "'general.architecture': unknown value type 13");
  const size_t tokens = find_record(b, "tokenizer.ggml.tokens") + 8 + 21;
  b = orig;
  put<uint32_t>(b, tokens + 4, 9);
  expect_gguf_error(b, StatusCode::kCorrupt, "arrays of arrays");
  b = orig;
  put<uint32_t>(b, tokens + 4, 77);
  expect_gguf_error(b, StatusCode::kCorrupt, "unknown array element type 77");
  b = orig;
  const size_t bos = find_record(b, "tokenizer.ggml.add_bos_token") + 8 + 28;
  ASSERT_EQ(get<uint32_t>(b, bos), 7u);
  b[bos + 4] = 2;
  expect_gguf_error(b, StatusCode::kCorrupt, "neither 0 nor 1");
}

// A tiny GGUF writer for shapes no real file has.
class TinyGgufWriter {
 public:
  template <class T>
  TinyGgufWriter& raw(T v) {
    const auto* p = reinterpret_cast<const uint8_t*>(&v);
    body_.insert(body_.end(), p, p + sizeof(T));
    return *this;
  }
  TinyGgufWriter& str(std::string_view s) {
    raw<uint64_t>(s.size());
    body_.insert(body_.end(), s.begin(), s.end());
    return *this;
  }
  TinyGgufWriter& kv(std::string_view key, uint32_t type) {
    ++n_kv_;
    return str(key).raw(type);
  }
  TinyGgufWriter& tensor(std::string_view name, std::vector<uint64_t> ne, uint32_t type, uint64_t offset) {
    ++n_tensors_;
    str(name).raw<uint32_t>(static_cast<uint32_t>(ne.size()));
    for (uint64_t d : ne) raw(d);
    return raw(type).raw(offset);
  }
  Bytes finish(uint32_t version, size_t alignment, const Bytes& data) const {
    Bytes out;
    auto app = [&](auto v) {
      const auto* p = reinterpret_cast<const uint8_t*>(&v);
      out.insert(out.end(), p, p + sizeof(v));
    };
    app(uint32_t{0x46554747});
    app(version);
    app(n_tensors_);
    app(n_kv_);
    out.insert(out.end(), body_.begin(), body_.end());
    if (n_tensors_ > 0) out.resize((out.size() + alignment - 1) / alignment * alignment, 0);
    out.insert(out.end(), data.begin(), data.end());
    return out;
  }

 private:
  Bytes body_;
  uint64_t n_tensors_ = 0;
  uint64_t n_kv_ = 0;
};

TEST(GgufTest, AllValueTypesAndAlignment) {
  TinyGgufWriter w;
  w.kv("general.alignment", 4).raw<uint32_t>(64);
  w.kv("u8", 0).raw<uint8_t>(200);
  w.kv("i8", 1).raw<int8_t>(-5);
  w.kv("u16", 2).raw<uint16_t>(65535);
  w.kv("i16", 3).raw<int16_t>(-300);
  w.kv("i32", 5).raw<int32_t>(-70000);
  w.kv("f32", 6).raw<float>(0.25f);
  w.kv("u64", 10).raw<uint64_t>(std::numeric_limits<uint64_t>::max());
  w.kv("i64", 11).raw<int64_t>(std::numeric_limits<int64_t>::min());
  w.kv("f64", 12).raw<double>(-1.5);
  w.kv("bytes", 8).str("\xff\xfe not utf-8");
  w.kv("empty", 9).raw<uint32_t>(4).raw<uint64_t>(0);
  w.tensor("scalar", {}, 0, 0);
  w.tensor("vec", {3}, 0, 64);
  Bytes data(64 + 12, 0);
  const float one = 1.0f;
  std::memcpy(data.data(), &one, 4);
  const Bytes file = w.finish(2, 64, data);  // parse() keeps pointers into these bytes: they must outlive it
  auto r = parse_bytes(file);
  ASSERT_TRUE(r.ok()) << r.status().to_string();
  const GgufFile& f = **r;
  const nlohmann::json& m = f.metadata();
  EXPECT_EQ(f.version(), 2u);
  EXPECT_EQ(f.alignment(), 64u);
  EXPECT_EQ(f.data_offset() % 64, 0u);
  EXPECT_EQ(m.at("u8").get<uint64_t>(), 200u);
  EXPECT_EQ(m.at("i8").get<int64_t>(), -5);
  EXPECT_EQ(m.at("u16").get<uint64_t>(), 65535u);
  EXPECT_EQ(m.at("i16").get<int64_t>(), -300);
  EXPECT_EQ(m.at("i32").get<int64_t>(), -70000);
  EXPECT_EQ(m.at("f32").get<double>(), 0.25);
  EXPECT_EQ(m.at("u64").get<uint64_t>(), std::numeric_limits<uint64_t>::max());
  EXPECT_EQ(m.at("i64").get<int64_t>(), std::numeric_limits<int64_t>::min());
  EXPECT_EQ(m.at("f64").get<double>(), -1.5);
  EXPECT_EQ(m.at("bytes").get<std::string>(), "\xff\xfe not utf-8");  // kept as-is
  EXPECT_TRUE(m.at("empty").is_array() && m.at("empty").empty());
  const GgufTensorInfo* s = f.find("scalar");
  ASSERT_NE(s, nullptr);
  EXPECT_EQ(s->view().n_dims, 0);
  EXPECT_EQ(s->view().n_elements(), 1);
  EXPECT_EQ(*s->view().as<float>(), 1.0f);
  EXPECT_EQ(f.find("vec")->n_bytes, 12u);
}

TEST(GgufTest, BadAlignmentAndDuplicateKeys) {
  for (uint32_t a : {0u, 48u}) {
    TinyGgufWriter w;
    w.kv("general.alignment", 4).raw<uint32_t>(a);
    expect_gguf_error(w.finish(3, 32, {}), StatusCode::kCorrupt, "general.alignment must be a power-of-two u32");
  }
  TinyGgufWriter neg;
  neg.kv("general.alignment", 5).raw<int32_t>(32);  // an i32 is not a u32
  expect_gguf_error(neg.finish(3, 32, {}), StatusCode::kCorrupt, "power-of-two u32, got a number");
  TinyGgufWriter str;
  str.kv("general.alignment", 8).str("\xff");  // must not reach json::dump, which throws on invalid UTF-8
  expect_gguf_error(str.finish(3, 32, {}), StatusCode::kCorrupt, "got a string");
  TinyGgufWriter w;
  w.kv("general.alignment", 4).raw<uint32_t>(64);
  w.tensor("t", {8}, 0, 32);  // fine for the default 32, not for 64
  expect_gguf_error(w.finish(3, 64, Bytes(64, 0)), StatusCode::kCorrupt, "alignment 64");
  TinyGgufWriter dup;
  dup.kv("a", 4).raw<uint32_t>(1);
  dup.kv("a", 4).raw<uint32_t>(2);
  expect_gguf_error(dup.finish(3, 32, {}), StatusCode::kCorrupt, "duplicate metadata key 'a'");
}

}  // namespace
}  // namespace cai
