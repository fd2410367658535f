// Model writers and cai-mkmodel: GGUF/safetensors files written here and read back with the project's readers.
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>
#include <unistd.h>

#include <cmath>
#include <cstdlib>
#include <cstring>
#include <algorithm>
#include <filesystem>
#include <map>
#include <set>

#include "core/dtype.h"
#include "core/quant.h"
#include "model/loaders/gguf.h"
#include "writers/gguf_writer.h"
#include "model/loaders/safetensors.h"
#include "writers/safetensors_writer.h"
#include "model_test_util.h"
#include "test_paths.h"

namespace cai {
namespace {

using test::rel_rms_error;
using test::TempDir;

namespace fs = std::filesystem;
using nlohmann::json;
using test::Bytes;

// Deterministic test floats with a spread of magnitudes and signs.
std::vector<float> test_floats(size_t n, float scale) {
  std::vector<float> v(n);
  for (size_t i = 0; i < n; ++i)
    v[i] = scale * std::sin(0.37f * static_cast<float>(i) + 0.1f) * (1.0f + (i % 7) * 0.1f);
  return v;
}

Bytes encode(DType t, const std::vector<float>& x) {
  Bytes out(row_bytes(t, static_cast<int64_t>(x.size())));
  EXPECT_TRUE(quantize_row(t, x.data(), out.data(), static_cast<int64_t>(x.size())).ok());
  return out;
}

std::vector<float> decode(DType t, const uint8_t* data, int64_t n) {
  std::vector<float> out(static_cast<size_t>(n));
  dequantize_row(t, data, out.data(), n);
  return out;
}

std::unique_ptr<GgufFile> open_gguf(const std::string& path) {
  auto f = GgufFile::open(path);
  EXPECT_TRUE(f.ok()) << f.status().to_string();
  return f.ok() ? std::move(f).value() : nullptr;
}

// ---- GgufWriter ----------------------------------------------------------------------------------------------

TEST(GgufWriter, EncodesMetadataByteForByte) {
  TempDir dir;
  GgufWriter w;
  w.set_u32("a", 7);
  w.set_bool("b", true);
  w.set_strings("c", {"x", "yz"});
  ASSERT_TRUE(w.write(dir / "m.gguf").ok());
  // Hand-assembled: magic, version 3, 0 tensors, 3 kvs, then each key (u64 len + bytes), type, value. No padding.
  const Bytes expect = {'G', 'G', 'U', 'F', 3, 0, 0, 0,   0, 0, 0, 0, 0, 0,   0, 0, 3, 0, 0, 0, 0, 0, 0,   0,  1,
                        0,   0,   0,   0,   0, 0, 0, 'a', 4, 0, 0, 0, 7, 0,   0, 0, 1, 0, 0, 0, 0, 0, 0,   0,  'b',
                        7,   0,   0,   0,   1, 1, 0, 0,   0, 0, 0, 0, 0, 'c', 9, 0, 0, 0, 8, 0, 0, 0, 2,   0,  0,
                        0,   0,   0,   0,   0, 1, 0, 0,   0, 0, 0, 0, 0, 'x', 2, 0, 0, 0, 0, 0, 0, 0, 'y', 'z'};
  const std::string got = test::read_file(dir / "m.gguf");
  EXPECT_EQ(Bytes(got.begin(), got.end()), expect);
}

TEST(GgufWriter, RoundTripsMetadataAndEveryTensorType) {
  TempDir dir;
  GgufWriter w;
  w.set_u32("general.alignment", 64);
  w.set_string("general.architecture", "qwen2");
  w.set_i32("t.i32", -5);
  w.set_u64("t.u64", 1ull << 40);
  w.set_f32("t.f32", 0.25f);
  w.set_bool("t.bool", false);
  w.set_strings("t.strs", {"a", "", "Ġb"});
  w.set_f32s("t.f32s", {1.5f, -2.0f});
  w.set_i32s("t.i32s", {1, -1, 3});
  w.set_u32("t.replaced", 1);
  w.set_u32("t.replaced", 2);

  struct Src {
    std::string name;
    DType dtype;
    std::vector<int64_t> shape;
    std::vector<float> values;
    Bytes bytes;
  };
  std::vector<Src> srcs = {
      {"f32.weight", DType::kF32, {5}, {}, {}},           {"f16.weight", DType::kF16, {3, 40}, {}, {}},
      {"bf16.weight", DType::kBF16, {2, 8}, {}, {}},      {"q8_0.weight", DType::kQ8_0, {3, 64}, {}, {}},
      {"q4_0.weight", DType::kQ4_0, {2, 32}, {}, {}},     {"q4_K.weight", DType::kQ4_K, {2, 512}, {}, {}},
      {"q5_K.weight", DType::kQ5_K, {2, 1, 256}, {}, {}}, {"q6_K.weight", DType::kQ6_K, {3, 256}, {}, {}},
  };
  for (Src& s : srcs) {
    int64_t n = 1;
    for (int64_t d : s.shape) n *= d;
    s.values = test_floats(static_cast<size_t>(n), 0.5f);
    s.bytes = encode(s.dtype, s.values);
    ASSERT_TRUE(w.add_tensor(s.name, s.dtype, s.shape, s.bytes).ok());
  }
  ASSERT_EQ(w.alignment(), 64u);
  ASSERT_TRUE(w.write(dir / "t.gguf").ok());

  const std::string raw = test::read_file(dir / "t.gguf");
  auto parsed = GgufFile::parse(reinterpret_cast<const uint8_t*>(raw.data()), raw.size());
  ASSERT_TRUE(parsed.ok()) << parsed.status().to_string();
  const GgufFile& f = *parsed.value();
  EXPECT_EQ(f.version(), 3u);
  EXPECT_EQ(f.alignment(), 64u);
  const json& m = f.metadata();
  EXPECT_EQ(m["general.alignment"], 64);
  EXPECT_EQ(m["general.architecture"], "qwen2");
  EXPECT_EQ(m["t.i32"], -5);
  EXPECT_EQ(m["t.u64"], 1ull << 40);
  EXPECT_EQ(m["t.f32"], 0.25);
  EXPECT_EQ(m["t.bool"], false);
  EXPECT_EQ(m["t.strs"], json::array({"a", "", "Ġb"}));
  EXPECT_EQ(m["t.f32s"], json::array({1.5, -2.0}));
  EXPECT_EQ(m["t.i32s"], json::array({1, -1, 3}));
  EXPECT_EQ(m["t.replaced"], 2);
  EXPECT_EQ(m.size(), 10u);

  ASSERT_EQ(f.tensors().size(), srcs.size());
  for (size_t i = 0; i < srcs.size(); ++i) {
    const Src& s = srcs[i];
    const GgufTensorInfo& t = f.tensors()[i];
    SCOPED_TRACE(s.name);
    EXPECT_EQ(t.name, s.name);
    EXPECT_EQ(t.dtype, s.dtype);
    EXPECT_EQ(t.ne, std::vector<int64_t>(s.shape.rbegin(), s.shape.rend()));
    EXPECT_EQ(t.offset % 64, 0u);
    EXPECT_EQ((t.data - reinterpret_cast<const uint8_t*>(raw.data())) % 64, 0);
    ASSERT_EQ(t.n_bytes, s.bytes.size());
    EXPECT_EQ(std::memcmp(t.data, s.bytes.data(), t.n_bytes), 0);
    const auto back = decode(t.dtype, t.data, static_cast<int64_t>(s.values.size()));
    EXPECT_LT(rel_rms_error(back, s.values), is_quantized(s.dtype) ? 0.08 : 0.005);
  }
  // The file ends right after the last tensor.
  const GgufTensorInfo& last = f.tensors().back();
  EXPECT_EQ(static_cast<size_t>(last.data - reinterpret_cast<const uint8_t*>(raw.data())) + last.n_bytes, raw.size());
}

TEST(GgufWriter, StreamsTensorsFromCallbacksInOrder) {
  TempDir dir;
  GgufWriter w;
  std::vector<std::string> calls;
  for (int i = 0; i < 3; ++i) {
    const std::string name = fmt::format("t{}", i);
    ASSERT_TRUE(w.add_tensor(name, DType::kF32, {int64_t{i + 1}}, [&calls, name, i](uint8_t* dst, size_t n) {
                   calls.push_back(name);
                   EXPECT_EQ(n, static_cast<size_t>(4 * (i + 1)));
                   for (size_t k = 0; k < n / 4; ++k) {
                     const float v = static_cast<float>(10 * i + static_cast<int>(k));
                     std::memcpy(dst + 4 * k, &v, 4);
                   }
                   return Status::ok_status();
                 }).ok());
  }
  EXPECT_TRUE(calls.empty());  // nothing generated before write()
  ASSERT_TRUE(w.write(dir / "s.gguf").ok());
  EXPECT_EQ(calls, (std::vector<std::string>{"t0", "t1", "t2"}));
  auto f = open_gguf(dir / "s.gguf");
  ASSERT_TRUE(f);
  EXPECT_EQ(f->alignment(), 32u);
  const GgufTensorInfo* t2 = f->find("t2");
  ASSERT_TRUE(t2);
  EXPECT_EQ(t2->offset, 64u);  // 4 bytes and 8 bytes, each padded to 32
  EXPECT_EQ(reinterpret_cast<const float*>(t2->data)[2], 22.0f);
}

TEST(GgufWriter, RejectsBadInput) {
  TempDir dir;
  GgufWriter w;
  EXPECT_TRUE(w.add_tensor("a", DType::kF32, {2}, Bytes(8)).ok());
  EXPECT_EQ(w.add_tensor("a", DType::kF32, {2}, Bytes(8)).code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(w.add_tensor(std::string(64, 'n'), DType::kF32, {2}, Bytes(8)).code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(w.add_tensor("k", DType::kQ4_K, {2, 100}, Bytes(8)).code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(w.add_tensor("e", DType::kF32, {1, 2, 3, 4, 5}, Bytes(8)).code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(w.add_tensor("f8", DType::kF8_E4M3, {4}, Bytes(4)).code(), StatusCode::kUnsupported);

  GgufWriter short_data;
  ASSERT_TRUE(short_data.add_tensor("s", DType::kF32, {4}, Bytes(12)).ok());  // 16 needed
  const Status st = short_data.write(dir / "short.gguf");
  EXPECT_EQ(st.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(st.message().find("'s'"), std::string::npos) << st.message();

  GgufWriter bad_align;
  bad_align.set_u32("general.alignment", 48);
  EXPECT_EQ(bad_align.write(dir / "a.gguf").code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(GgufWriter().write(dir / "no/such/dir.gguf").code(), StatusCode::kIo);
}

// ---- SafetensorsWriter ---------------------------------------------------------------------------------------

struct StSrc {
  std::string name;
  DType dtype;
  std::vector<int64_t> shape;
  Bytes bytes;
};

std::vector<StSrc> st_sources() {
  std::vector<StSrc> v = {{"w.f32", DType::kF32, {3, 5}, {}},
                          {"w.f16", DType::kF16, {7}, {}},
                          {"w.bf16", DType::kBF16, {2, 3}, {}},
                          {"w.f8", DType::kF8_E4M3, {4, 4}, {}},
                          {"w.i32", DType::kI32, {3}, {}}};
  uint8_t k = 1;
  for (StSrc& s : v) {
    int64_t n = 1;
    for (int64_t d : s.shape) n *= d;
    s.bytes.resize(static_cast<size_t>(n) * static_cast<size_t>(dtype_info(s.dtype).block_bytes));
    for (uint8_t& b : s.bytes) b = k++;
  }
  return v;
}

void expect_tensor(const SafetensorsTensor* t, const StSrc& s, const char* dtype_name) {
  ASSERT_TRUE(t) << s.name;
  EXPECT_EQ(t->dtype_name, dtype_name);
  EXPECT_EQ(t->dtype, s.dtype);
  EXPECT_EQ(t->shape, s.shape);
  ASSERT_EQ(t->n_bytes, s.bytes.size());
  EXPECT_EQ(std::memcmp(t->data, s.bytes.data(), t->n_bytes), 0) << s.name;
}

TEST(SafetensorsWriter, RoundTripsTensorsAndMetadata) {
  TempDir dir;
  SafetensorsWriter w;
  w.set_metadata("format", "pt");
  const auto srcs = st_sources();
  for (const StSrc& s : srcs) ASSERT_TRUE(w.add_tensor(s.name, s.dtype, s.shape, s.bytes).ok());
  ASSERT_TRUE(w.write(dir / "m.safetensors").ok());

  const std::string raw = test::read_file(dir / "m.safetensors");
  uint64_t n_header = 0;
  std::memcpy(&n_header, raw.data(), 8);
  EXPECT_EQ((8 + n_header) % 8, 0u);
  size_t total = 0;
  for (const StSrc& s : srcs) total += s.bytes.size();
  EXPECT_EQ(raw.size(), 8 + n_header + total);  // packed, no holes

  auto f = SafetensorsFile::open(dir / "m.safetensors");
  ASSERT_TRUE(f.ok()) << f.status().to_string();
  EXPECT_EQ(f.value()->metadata(), (std::map<std::string, std::string>{{"format", "pt"}}));
  const char* names[] = {"F32", "F16", "BF16", "F8_E4M3", "I32"};
  for (size_t i = 0; i < srcs.size(); ++i) expect_tensor(f.value()->find(srcs[i].name), srcs[i], names[i]);
}

TEST(SafetensorsWriter, WritesShardsAndIndex) {
  TempDir dir;
  SafetensorsWriter w;
  const auto srcs = st_sources();  // 60, 14, 12, 16, 12 bytes
  for (const StSrc& s : srcs) ASSERT_TRUE(w.add_tensor(s.name, s.dtype, s.shape, s.bytes).ok());
  auto names = w.write_sharded(dir / "", 30);
  ASSERT_TRUE(names.ok()) << names.status().to_string();
  // Greedy in order: [w.f32] (over the limit alone), [w.f16 w.bf16], [w.f8 w.i32].
  EXPECT_EQ(names.value(),
            (std::vector<std::string>{"model-00001-of-00003.safetensors", "model-00002-of-00003.safetensors",
                                      "model-00003-of-00003.safetensors"}));
  const json index = json::parse(test::read_file(dir / "model.safetensors.index.json"));
  EXPECT_EQ(index["metadata"]["total_size"], 114);
  EXPECT_EQ(index["weight_map"]["w.bf16"], "model-00002-of-00003.safetensors");
  EXPECT_EQ(index["weight_map"]["w.i32"], "model-00003-of-00003.safetensors");
  EXPECT_EQ(index["weight_map"].size(), srcs.size());

  auto ckpt = SafetensorsCheckpoint::open_dir(dir / "");
  ASSERT_TRUE(ckpt.ok()) << ckpt.status().to_string();
  EXPECT_EQ(ckpt.value()->shards().size(), 3u);
  const char* dtype_names[] = {"F32", "F16", "BF16", "F8_E4M3", "I32"};
  for (size_t i = 0; i < srcs.size(); ++i) expect_tensor(ckpt.value()->find(srcs[i].name), srcs[i], dtype_names[i]);
}

TEST(SafetensorsWriter, RejectsBadInput) {
  SafetensorsWriter w;
  EXPECT_EQ(w.add_tensor("q", DType::kQ8_0, {32}, Bytes(34)).code(), StatusCode::kUnsupported);
  EXPECT_EQ(w.add_tensor("__metadata__", DType::kF32, {1}, Bytes(4)).code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(w.add_tensor("x", DType::kF32, {-1}, Bytes(4)).code(), StatusCode::kInvalidArgument);
  ASSERT_TRUE(w.add_tensor("x", DType::kF32, {1}, Bytes(4)).ok());
  EXPECT_EQ(w.add_tensor("x", DType::kF32, {1}, Bytes(4)).code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(w.write_sharded("/tmp", 0).status().code(), StatusCode::kInvalidArgument);
}

// ---- cai-mkmodel ----------------------------------------------------------------------------------------------

// Runs cai-mkmodel with `args`; true when it exits 0.
bool mkmodel(const std::string& args) {
  const std::string cmd = test::binary_path("cai-mkmodel") + " " + args + " > /dev/null 2>&1";
  return std::system(cmd.c_str()) == 0;
}

// HF name → GGUF name (docs/design/formats.md#tensor-names) for the llama/qwen2 tensors.
std::string gguf_name(const std::string& hf) {
  if (hf == "model.embed_tokens.weight") return "token_embd.weight";
  if (hf == "model.norm.weight") return "output_norm.weight";
  if (hf == "lm_head.weight") return "output.weight";
  static const std::pair<std::string, std::string> kLayer[] = {
      {"input_layernorm.", "attn_norm."}, {"post_attention_layernorm.", "ffn_norm."},
      {"self_attn.q_proj.", "attn_q."},   {"self_attn.k_proj.", "attn_k."},
      {"self_attn.v_proj.", "attn_v."},   {"self_attn.o_proj.", "attn_output."},
      {"mlp.gate_proj.", "ffn_gate."},    {"mlp.up_proj.", "ffn_up."},
      {"mlp.down_proj.", "ffn_down."}};
  const std::string prefix = "model.layers.";
  const size_t dot = hf.find('.', prefix.size());
  const std::string rest = hf.substr(dot + 1);
  for (const auto& [from, to] : kLayer) {
    if (rest.rfind(from, 0) == 0)
      return "blk." + hf.substr(prefix.size(), dot - prefix.size()) + "." + to + rest.substr(from.size());
  }
  return "?" + hf;
}

std::vector<float> tensor_floats(const SafetensorsTensor& t) {
  int64_t n = 1;
  for (int64_t d : t.shape) n *= d;
  return decode(*t.dtype, t.data, n);
}

// The GGUF rows of a llama q/k weight hold the HF rows permuted within each head of `head_dim` rows.
std::vector<float> llama_permute(const std::vector<float>& hf, int64_t rows, int64_t cols, int64_t head_dim) {
  std::vector<float> out(hf.size());
  for (int64_t r = 0; r < rows; ++r) {
    const int64_t j = r % head_dim;
    const int64_t src = r - j + j / 2 + (j % 2) * (head_dim / 2);
    std::copy_n(hf.begin() + src * cols, cols, out.begin() + r * cols);
  }
  return out;
}

// Every HF tensor has its GGUF counterpart with the reversed shape and (up to the llama permutation and the GGUF
// type's rounding) the same values. Returns the GGUF types seen per tensor.
std::map<std::string, DType> compare_weights(const std::string& gguf_path, const std::string& hf_dir, bool llama,
                                             double max_quant_error) {
  auto g = open_gguf(gguf_path);
  auto hf = SafetensorsCheckpoint::open_dir(hf_dir);
  EXPECT_TRUE(g && hf.ok());
  if (!g || !hf.ok()) return {};
  std::map<std::string, DType> types;
  const auto& st = hf.value()->shards().at(0)->tensors();
  EXPECT_EQ(st.size(), g->tensors().size());
  for (const SafetensorsTensor& t : st) {
    SCOPED_TRACE(t.name);
    const GgufTensorInfo* gt = g->find(gguf_name(t.name));
    EXPECT_TRUE(gt);
    if (!gt) continue;
    types[gt->name] = gt->dtype;
    EXPECT_EQ(gt->ne, std::vector<int64_t>(t.shape.rbegin(), t.shape.rend()));
    std::vector<float> want = tensor_floats(t);
    const bool permuted =
        llama && (gt->name.find("attn_q.") != std::string::npos || gt->name.find("attn_k.") != std::string::npos);
    if (permuted) want = llama_permute(want, t.shape[0], t.shape[1], 64);
    const auto got = decode(gt->dtype, gt->data, static_cast<int64_t>(want.size()));
    if (gt->dtype == DType::kF32) {
      EXPECT_EQ(got, want);
    } else {
      EXPECT_LT(rel_rms_error(got, want), max_quant_error) << dtype_name(gt->dtype);
    }
  }
  return types;
}

TEST(Mkmodel, Qwen2GgufAndHfHoldTheSameWeights) {
  TempDir dir;
  ASSERT_TRUE(mkmodel("--arch qwen2 --preset tiny --seed 7 -o " + dir / "m.gguf"));
  ASSERT_TRUE(mkmodel("--arch qwen2 --preset tiny --seed 7 --format hf -o " + dir / "hf"));
  const auto types = compare_weights(dir / "m.gguf", dir / "hf", false, 0);
  EXPECT_EQ(types.size(), 1u + 2 * 12 + 1);  // tied: no output.weight; qwen2 layers carry q/k/v biases
  EXPECT_EQ(types.count("blk.1.attn_k.bias"), 1u);
}

TEST(Mkmodel, LlamaGgufIsTheHfModelWithQkRowsPermuted) {
  TempDir dir;
  ASSERT_TRUE(mkmodel("--arch llama --preset tiny --seed 3 -o " + dir / "m.gguf"));
  ASSERT_TRUE(mkmodel("--arch llama --preset tiny --seed 3 --format hf -o " + dir / "hf"));
  const auto types = compare_weights(dir / "m.gguf", dir / "hf", true, 0);
  EXPECT_EQ(types.size(), 1u + 2 * 9 + 2);  // untied: output.weight present; no biases
  EXPECT_EQ(types.count("output.weight"), 1u);
}

TEST(Mkmodel, QuantizedGgufIsCloseToTheFloatWeights) {
  TempDir dir;
  ASSERT_TRUE(mkmodel("--preset tiny --seed 5 --format hf -o " + dir / "hf"));
  ASSERT_TRUE(mkmodel("--preset tiny --seed 5 --dtype q4_K -o " + dir / "q4k.gguf"));
  auto types = compare_weights(dir / "q4k.gguf", dir / "hf", false, 0.12);
  EXPECT_EQ(types["token_embd.weight"], DType::kQ6_K);  // tied: the logits matrix gets Q6_K, as in q4_K_M
  EXPECT_EQ(types["blk.0.attn_q.weight"], DType::kQ4_K);
  EXPECT_EQ(types["blk.1.ffn_down.weight"], DType::kQ4_K);
  EXPECT_EQ(types["blk.0.attn_q.bias"], DType::kF32);
  EXPECT_EQ(types["output_norm.weight"], DType::kF32);

  ASSERT_TRUE(mkmodel("--preset tiny --seed 5 --dtype q8_0 -o " + dir / "q8.gguf"));
  types = compare_weights(dir / "q8.gguf", dir / "hf", false, 0.01);
  EXPECT_EQ(types["token_embd.weight"], DType::kQ8_0);
  EXPECT_EQ(types["blk.0.ffn_up.weight"], DType::kQ8_0);
  // hidden 96 holds no whole 256-blocks: K-quant rows fall back to Q8_0.
  ASSERT_TRUE(mkmodel("--preset tiny --hidden 96 --heads 2 --kv-heads 1 --dtype q5_K -o " + dir / "fb.gguf"));
  auto g = open_gguf(dir / "fb.gguf");
  ASSERT_TRUE(g);
  EXPECT_EQ(g->find("blk.0.attn_q.weight")->dtype, DType::kQ8_0);
  EXPECT_EQ(g->find("blk.0.ffn_down.weight")->dtype, DType::kQ5_K);  // rows of ffn = 512
}

TEST(Mkmodel, HfBf16IsTheRoundedF32Model) {
  TempDir dir;
  ASSERT_TRUE(mkmodel("--preset tiny --seed 9 -o " + dir / "m.gguf"));
  ASSERT_TRUE(mkmodel("--preset tiny --seed 9 --format hf --dtype bf16 --shard-mb 0.5 -o " + dir / "hf"));
  auto g = open_gguf(dir / "m.gguf");
  auto hf = SafetensorsCheckpoint::open_dir(dir / "hf");
  ASSERT_TRUE(g && hf.ok()) << hf.status().to_string();
  EXPECT_GT(hf.value()->shards().size(), 1u);
  const SafetensorsTensor* t = hf.value()->find("model.layers.1.mlp.down_proj.weight");
  ASSERT_TRUE(t);
  ASSERT_EQ(t->dtype, DType::kBF16);
  const GgufTensorInfo* gt = g->find("blk.1.ffn_down.weight");
  const auto* f32 = reinterpret_cast<const float*>(gt->data);
  const auto* bf16 = reinterpret_cast<const uint16_t*>(t->data);
  for (size_t i = 0; i < t->n_bytes / 2; ++i) ASSERT_EQ(bf16[i], f32_to_bf16(f32[i])) << i;
  EXPECT_EQ(json::parse(test::read_file(dir / "hf/config.json"))["torch_dtype"], "bfloat16");
}

TEST(Mkmodel, WritesConfigMetadataAndAConsistentTokenizer) {
  TempDir dir;
  ASSERT_TRUE(mkmodel("--preset tiny --vocab 400 --ctx 512 -o " + dir / "m.gguf"));
  ASSERT_TRUE(mkmodel("--preset tiny --vocab 400 --ctx 512 --format hf -o " + dir / "hf"));
  auto g = open_gguf(dir / "m.gguf");
  ASSERT_TRUE(g);
  const json& m = g->metadata();
  EXPECT_EQ(m["general.architecture"], "qwen2");
  EXPECT_EQ(m["general.file_type"], 0);
  EXPECT_EQ(m["qwen2.embedding_length"], 256);
  EXPECT_EQ(m["qwen2.block_count"], 2);
  EXPECT_EQ(m["qwen2.feed_forward_length"], 512);
  EXPECT_EQ(m["qwen2.attention.head_count"], 4);
  EXPECT_EQ(m["qwen2.attention.head_count_kv"], 2);
  EXPECT_EQ(m["qwen2.context_length"], 512);
  EXPECT_EQ(m["qwen2.rope.dimension_count"], 64);
  EXPECT_FLOAT_EQ(m["qwen2.rope.freq_base"].get<float>(), 1e6f);
  EXPECT_FLOAT_EQ(m["qwen2.attention.layer_norm_rms_epsilon"].get<float>(), 1e-6f);
  EXPECT_EQ(m["tokenizer.ggml.model"], "gpt2");
  EXPECT_EQ(m["tokenizer.ggml.pre"], "qwen2");

  const auto tokens = m["tokenizer.ggml.tokens"].get<std::vector<std::string>>();
  const auto types = m["tokenizer.ggml.token_type"].get<std::vector<int>>();
  ASSERT_EQ(tokens.size(), 400u);
  ASSERT_EQ(types.size(), 400u);
  EXPECT_EQ(std::set<std::string>(tokens.begin(), tokens.end()).size(), 400u);  // unique
  EXPECT_EQ(tokens[0], "!");
  EXPECT_EQ(std::count(tokens.begin(), tokens.end(), "Ġ"), 1);  // the space byte
  const int bos = m["tokenizer.ggml.bos_token_id"];
  EXPECT_EQ(tokens[static_cast<size_t>(bos)], "<|endoftext|>");
  EXPECT_EQ(types[static_cast<size_t>(bos)], 3);
  const auto merges = m["tokenizer.ggml.merges"].get<std::vector<std::string>>();
  ASSERT_GT(merges.size(), 100u);
  const std::set<std::string> vocab(tokens.begin(), tokens.end());
  for (const std::string& mg : merges) {
    const size_t sp = mg.find(' ', 1);
    ASSERT_NE(sp, std::string::npos) << mg;
    EXPECT_TRUE(vocab.count(mg.substr(0, sp)) && vocab.count(mg.substr(sp + 1)) &&
                vocab.count(mg.substr(0, sp) + mg.substr(sp + 1)))
        << mg;
  }

  const json tj = json::parse(test::read_file(dir / "hf/tokenizer.json"));
  EXPECT_EQ(tj["model"]["type"], "BPE");
  EXPECT_EQ(tj["model"]["merges"].get<std::vector<std::string>>(), merges);
  for (const auto& [text, id] : tj["model"]["vocab"].items()) EXPECT_EQ(tokens[id.get<size_t>()], text);
  for (const json& a : tj["added_tokens"]) EXPECT_EQ(tokens[a["id"].get<size_t>()], a["content"]);
  EXPECT_EQ(tj["model"]["vocab"].size() + tj["added_tokens"].size(), 400u);

  const json cfg = json::parse(test::read_file(dir / "hf/config.json"));
  EXPECT_EQ(cfg["architectures"], json::array({"Qwen2ForCausalLM"}));
  EXPECT_EQ(cfg["vocab_size"], 400);
  EXPECT_EQ(cfg["max_position_embeddings"], 512);
  EXPECT_EQ(cfg["tie_word_embeddings"], true);
  EXPECT_EQ(cfg["bos_token_id"], bos);
  EXPECT_EQ(cfg["torch_dtype"], "float32");
  EXPECT_TRUE(json::parse(test::read_file(dir / "hf/tokenizer_config.json")).contains("chat_template"));
}

TEST(Mkmodel, SameSeedSameFileOtherSeedOtherWeights) {
  TempDir dir;
  ASSERT_TRUE(mkmodel("--preset tiny --seed 1 -o " + dir / "a.gguf"));
  ASSERT_TRUE(mkmodel("--preset tiny --seed 1 --threads 1 -o " + dir / "b.gguf"));
  ASSERT_TRUE(mkmodel("--preset tiny --seed 2 -o " + dir / "c.gguf"));
  const std::string a = test::read_file(dir / "a.gguf");
  EXPECT_EQ(a, test::read_file(dir / "b.gguf"));
  const std::string c = test::read_file(dir / "c.gguf");
  ASSERT_EQ(a.size(), c.size());
  EXPECT_NE(a, c);
}

// --chain: a greedy model that reads a link's first token writes its second, whatever came before, in GGUF and HF
// alike (the same weights); the links' rows are the only ones that differ from the unchained model.
TEST(Mkmodel, TokenChainIsWhatTheModelWrites) {
  TempDir dir;
  const std::string chain = " --arch qwen2 --preset tiny --tie-embeddings false --chain 5:9,9:12,12:7,7:250";
  ASSERT_TRUE(mkmodel(chain + " -o " + dir / "c.gguf"));
  ASSERT_TRUE(mkmodel(chain + " --format hf --dtype f32 -o " + dir / "hf"));
  compare_weights(dir / "c.gguf", dir / "hf", false, 0);
  for (const std::string& model : {dir / "c.gguf", dir / "hf"}) {
    for (const char* prompt : {"3,40,5", "100,5", "5"}) {
      const test::CommandResult r = test::run_command(test::binary_path("cai") + " eval -m " + model + " --tokens " +
                                                      prompt + " --greedy 4 --json");
      ASSERT_EQ(r.exit_code, 0) << r.err;
      const std::string last_line = r.out.substr(r.out.rfind('\n', r.out.size() - 2) + 1);  // the --json line
      const json out = json::parse(last_line);
      EXPECT_EQ(out["greedy"], json::parse("[9, 12, 7, 250]")) << model << " after " << prompt;
    }
  }
  auto plain =
      open_gguf((mkmodel(" --arch qwen2 --preset tiny --tie-embeddings false -o " + dir / "p.gguf"), dir / "p.gguf"));
  auto chained = open_gguf(dir / "c.gguf");
  ASSERT_TRUE(plain && chained);
  const GgufTensorInfo* a = plain->find("token_embd.weight");
  const GgufTensorInfo* b = chained->find("token_embd.weight");
  const int64_t cols = a->ne[0];
  const size_t row = row_bytes(a->dtype, cols);
  for (int64_t r = 0; r < a->ne[1]; ++r) {
    const bool linked = r == 5 || r == 9 || r == 12 || r == 7;
    EXPECT_EQ(std::memcmp(a->data + r * row, b->data + r * row, row) != 0, linked) << "row " << r;
  }
  EXPECT_FALSE(mkmodel(" --preset tiny --tie-embeddings true --chain 5:9 -o " + dir / "x.gguf"));  // one matrix
  EXPECT_FALSE(mkmodel(" --preset tiny --tie-embeddings false --chain 5:9,5:10 -o " + dir / "x.gguf"));
  EXPECT_FALSE(mkmodel(" --preset tiny --tie-embeddings false --chain 5-9 -o " + dir / "x.gguf"));
  EXPECT_FALSE(mkmodel(" --preset tiny --tie-embeddings false --chain 5:999 -o " + dir / "x.gguf"));
}

TEST(Mkmodel, RejectsBadArguments) {
  TempDir dir;
  EXPECT_FALSE(mkmodel("--preset tiny --vocab 100 -o " + dir / "x.gguf"));          // no room for the byte tokens
  EXPECT_FALSE(mkmodel("--preset tiny --format hf --dtype q4_K -o " + dir / "h"));  // HF holds plain floats
  EXPECT_FALSE(mkmodel("--preset tiny --heads 3 -o " + dir / "x.gguf"));            // 256 not divisible by 3
  EXPECT_FALSE(mkmodel("--arch gpt9 -o " + dir / "x.gguf"));
  EXPECT_FALSE(mkmodel("--preset huge -o " + dir / "x.gguf"));
  EXPECT_FALSE(fs::exists(dir / "x.gguf"));
}

}  // namespace
}  // namespace cai
