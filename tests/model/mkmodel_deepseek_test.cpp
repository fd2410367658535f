// cai-mkmodel deepseek2: random DeepSeek models (GGUF, HF BF16/FP8) load and run; the HF→GGUF converter is exact.
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <set>

#include "core/quant.h"
#include "core/weight_row.h"
#include "hal/cpu/kernels/qdot_groups.h"
#include "hal/hal.h"
#include "model/decoder.h"
#include "model/kv_cache.h"
#include "model/config.h"
#include "model/loaders/gguf.h"
#include "model/loaders/mla_weights.h"
#include "model/loaders/safetensors.h"
#include "model/model_loader.h"
#include "model/weights.h"
#include "model_test_util.h"
#include "test_paths.h"

namespace cai {
namespace {

using test::rel_rms_error;
using test::row_f32;
using test::TempDir;

namespace fs = std::filesystem;
using nlohmann::json;

void make_model(const std::string& args) {
  const test::CommandResult r = test::run_command(test::binary_path("cai-mkmodel") + " " + args);
  ASSERT_EQ(r.exit_code, 0) << args << "\n" << r.out << r.err;
}

const std::vector<int32_t> kTokens = {297, 5, 17, 120, 42, 260, 3, 77, 150, 201, 9, 64};

// Loads the model and returns the logits of every position of kTokens (one prefill step), then of `decode_steps`
// single-token steps after it (kTokens again from the start), which MLA runs in its absorbed form.
std::vector<float> forward_logits(const std::string& path, int decode_steps = 0) {
  hal::Device* cpu = hal::Registry::global().find_device("cpu").value();
  Result<LoadedModel> lm = load_model(path, *cpu);
  EXPECT_TRUE(lm.ok()) << path << ": " << lm.status().to_string();
  if (!lm.ok()) return {};
  Model& m = *lm->model;
  const int n = static_cast<int>(kTokens.size());
  Result<KvCache> kv = KvCache::create(*cpu, m.kv_spec(), 1, n + decode_steps);
  EXPECT_TRUE(kv.ok());
  const std::vector<int32_t> table = identity_block_table(1);
  StepBatch b;
  b.tokens = kTokens;
  for (int i = 0; i < n; ++i) {
    b.positions.push_back(i);
    b.slots.push_back(i);
    b.logit_rows.push_back(i);
  }
  b.seqs.push_back({0, n, 0, table.data()});
  const size_t vocab = static_cast<size_t>(m.config().vocab_size);
  std::vector<float> logits(static_cast<size_t>(n) * vocab);
  const Status st = m.forward(b, *kv, logits.data());
  EXPECT_TRUE(st.ok()) << st.to_string();
  for (int s = 0; s < decode_steps; ++s) {
    const int pos = n + s;
    StepBatch d;
    d.tokens = {kTokens[static_cast<size_t>(s) % kTokens.size()]};
    d.positions = {pos};
    d.slots = {pos};
    d.logit_rows = {0};
    d.seqs.push_back({0, 1, pos, table.data()});
    logits.resize(logits.size() + vocab);
    const Status ds = m.forward(d, *kv, logits.data() + logits.size() - vocab);
    EXPECT_TRUE(ds.ok()) << ds.to_string();
  }
  return logits;
}

float max_abs(const std::vector<float>& v) {
  float m = 0;
  for (float x : v) m = std::max(m, std::fabs(x));
  return m;
}

float max_abs_diff(const std::vector<float>& a, const std::vector<float>& b) {
  EXPECT_EQ(a.size(), b.size());
  float m = 0;
  for (size_t i = 0; i < a.size() && i < b.size(); ++i) m = std::max(m, std::fabs(a[i] - b[i]));
  return m;
}

bool all_finite(const std::vector<float>& v) {
  return std::all_of(v.begin(), v.end(), [](float x) { return std::isfinite(x); });
}

// The tiny preset in every format, one seed: all load and run; same weights give the same logits; BF16 and FP8
// stay close to the float model.
TEST(MkmodelDeepseek, TinyPresetLoadsAndRunsInEveryFormat) {
  TempDir dir;
  const std::string common = "--arch deepseek2 --preset tiny --seed 11 ";
  make_model(common + "-o " + dir / "f32.gguf");
  make_model(common + "--dtype q8_0 -o " + dir / "q8.gguf");
  make_model(common + "--format hf -o " + dir / "hf32");
  make_model(common + "--format hf --dtype bf16 -o " + dir / "hfbf16");
  make_model(common + "--format hf --dtype fp8 --shard-mb 1 -o " + dir / "hffp8");
  make_model("--from " + dir / "hffp8" + " --dtype f32 -o " + dir / "fp8conv.gguf");

  const std::vector<float> ref = forward_logits(dir / "f32.gguf");
  ASSERT_EQ(ref.size(), kTokens.size() * 300);
  ASSERT_TRUE(all_finite(ref));
  const float scale = max_abs(ref);
  ASSERT_GT(scale, 0.05f);  // a model whose logits say something
  const std::vector<float> hf32 = forward_logits(dir / "hf32");
  EXPECT_LE(max_abs_diff(hf32, ref), 1e-5f * std::max(1.0f, scale));
  const std::vector<float> fp8 = forward_logits(dir / "hffp8");
  ASSERT_TRUE(all_finite(fp8));
  EXPECT_LE(max_abs_diff(forward_logits(dir / "fp8conv.gguf"), fp8), 1e-5f * std::max(1.0f, scale));
  // Rounded weights: the logits move, but stay near the float model's.
  for (const std::string& name : std::vector<std::string>{"q8.gguf", "hfbf16", "hffp8"}) {
    const std::vector<float> got = name == "hffp8" ? fp8 : forward_logits(dir / name);
    ASSERT_TRUE(all_finite(got)) << name;
    EXPECT_GT(max_abs_diff(got, ref), 0.0f) << name;
    const double err = rel_rms_error(got, ref);
    EXPECT_LE(err, name == "hffp8" ? 0.15 : 0.03) << name;
  }
}

// R1's MLA sizes (nope 128, v 128; kv_lora 128 here) in an FP8 checkpoint: kv_b_proj's W_UK / W_UV stay FP8 with
// their block scales (mla_weights.h) and decode to its values exactly, so prompt and absorbed decode steps give the
// logits of the same checkpoint converted to F32 (whose split is F32).
TEST(MkmodelDeepseek, Fp8KvBAtR1SizesRunsAsItsF32Conversion) {
  TempDir dir;
  make_model(
      "--arch deepseek2 --preset tiny --seed 12 --kv-lora 128 --qk-nope 128 --v-head 128 --format hf "
      "--dtype fp8 -o " +
      dir / "fp8");
  make_model("--from " + dir / "fp8" + " --dtype f32 -o " + dir / "f32.gguf");
  auto ckpt = SafetensorsCheckpoint::open_dir(dir / "fp8");
  ASSERT_TRUE(ckpt.ok()) << ckpt.status().to_string();
  hal::Device* cpu = hal::Registry::global().find_device("cpu").value();
  const MlaDims dims{4, 128, 128};
  auto store = WeightStore::from_checkpoint(std::move(*ckpt), 3, *cpu, &dims);
  ASSERT_TRUE(store.ok()) << store.status().to_string();
  for (const char* name : {"blk.0.attn_k_b.weight", "blk.0.attn_v_b.weight"}) {
    ASSERT_TRUE(store->has(name)) << name;
    const TensorView& w = store->all().at(name);
    EXPECT_EQ(w.dtype, DType::kF8_E4M3) << name;
    EXPECT_NE(w.scale, nullptr) << name;
  }
  const std::vector<float> want = forward_logits(dir / "f32.gguf", 3), got = forward_logits(dir / "fp8", 3);
  ASSERT_EQ(got.size(), (kTokens.size() + 3) * 300);
  ASSERT_TRUE(all_finite(want));
  EXPECT_LE(max_abs_diff(got, want), 1e-5f * std::max(1.0f, max_abs(want)));
}

// --precision fast on the CPU packs the stacked routed experts too (each [E, out, in] stack as its E · out rows, so
// every expert's slice is a packed weight: the bytes pack_row_groups makes), and the model's logits stay near the exact
// path's (int8 activations: 2 % of the largest logit, as the dense fast-path twin tests).
TEST(MkmodelDeepseek, FastPrecisionPacksStackedExpertsAndStaysNearExact) {
  TempDir dir;
  const std::string path = dir / "q4.gguf";
  make_model("--arch deepseek2 --preset tiny --seed 11 --dtype q4_0 -o " + path);
  hal::Device* cpu = hal::Registry::global().find_device("cpu").value();
  const std::vector<float> exact = forward_logits(path);
  struct FastScope {
    hal::Device* d;
    explicit FastScope(hal::Device* dev) : d(dev) { d->set_precision(hal::Precision::kFast); }
    ~FastScope() { d->set_precision(hal::Precision::kExact); }
  } fast_scope(cpu);
  const std::vector<float> fast = forward_logits(path);
  ASSERT_TRUE(all_finite(exact));
  ASSERT_TRUE(all_finite(fast));
  EXPECT_GT(max_abs_diff(fast, exact), 0.0f) << "the fast path did not run";
  EXPECT_LE(max_abs_diff(fast, exact), 2e-2f * max_abs(exact));

  Result<LoadedModel> lm = load_model(path, *cpu);
  ASSERT_TRUE(lm.ok()) << lm.status().to_string();
  auto* decoder = dynamic_cast<DecoderModel*>(lm->model.get());
  ASSERT_NE(decoder, nullptr);
  auto file = GgufFile::open(path);
  ASSERT_TRUE(file.ok()) << file.status().to_string();
  auto raw = WeightStore::from_gguf(std::move(*file), *cpu);  // the file's row-major views
  ASSERT_TRUE(raw.ok()) << raw.status().to_string();
  int n_stacks = 0;
  for (const auto& [name, w] : decoder->weights().all()) {
    if (name.find("_exps.") == std::string::npos) continue;
    ++n_stacks;
    const TensorView row_major = raw->all().at(name);
    ASSERT_EQ(w.n_dims, 3) << name;
    ASSERT_EQ(row_major.dtype, DType::kQ4_0) << name;
    EXPECT_EQ(w.dtype, DType::kQ4_0_R16) << name << ": the loaded model runs its experts unpacked";
    EXPECT_EQ(w.slice(1).dtype, DType::kQ4_0_R16) << name;
    std::vector<uint8_t> want(row_major.n_bytes());
    hal::cpu::pack_row_groups(DType::kQ4_0_R16, row_major.as<const uint8_t>(), want.data(), row_major.rows(),
                              row_major.cols(), nullptr);
    ASSERT_EQ(w.n_bytes(), want.size()) << name;
    EXPECT_EQ(0, std::memcmp(w.data, want.data(), want.size())) << name;
  }
  EXPECT_GT(n_stacks, 0);
}

// GGUF: deepseek2 keys per docs/design/formats.md#gguf-metadata-keys in mainline llama.cpp's MLA layout (one KV head of
// kv_lora + rope, the per-head sizes in key_length_mla / value_length_mla, kv_b split into attn_k_b / attn_v_b exactly
// as CAI splits the HF kv_b_proj at load), experts stacked [n_expert, out, in] holding the HF experts; the reader takes
// the head sizes back.
TEST(MkmodelDeepseek, GgufHasDeepseek2KeysAndStackedExperts) {
  TempDir dir;
  make_model("--arch deepseek2 --preset tiny --seed 4 -o " + dir / "m.gguf");
  make_model("--arch deepseek2 --preset tiny --seed 4 --format hf --dtype f32 -o " + dir / "hf");
  auto g = GgufFile::open(dir / "m.gguf");
  ASSERT_TRUE(g.ok()) << g.status().to_string();
  const json& md = (*g)->metadata();
  EXPECT_EQ(md["general.architecture"], "deepseek2");
  EXPECT_EQ(md["deepseek2.expert_gating_func"], 2);
  EXPECT_EQ(md["deepseek2.expert_group_count"], 4);
  EXPECT_EQ(md["deepseek2.expert_group_used_count"], 2);
  EXPECT_EQ(md["deepseek2.expert_used_count"], 4);
  EXPECT_EQ(md["deepseek2.leading_dense_block_count"], 1);
  EXPECT_EQ(md["deepseek2.attention.q_lora_rank"], 160);
  EXPECT_EQ(md["deepseek2.attention.kv_lora_rank"], 64);
  EXPECT_EQ(md["deepseek2.attention.head_count"], 4);
  EXPECT_EQ(md["deepseek2.attention.head_count_kv"], 1);
  EXPECT_EQ(md["deepseek2.attention.key_length"], 64 + 16);      // kv_lora + rope
  EXPECT_EQ(md["deepseek2.attention.value_length"], 64);         // kv_lora
  EXPECT_EQ(md["deepseek2.attention.key_length_mla"], 32 + 16);  // qk_nope + qk_rope
  EXPECT_EQ(md["deepseek2.attention.value_length_mla"], 32);     // v_head_dim
  EXPECT_EQ(md["deepseek2.rope.dimension_count"], 16);
  EXPECT_NEAR(md["deepseek2.rope.scaling.yarn_log_multiplier"].get<double>(), 0.1, 1e-7);
  EXPECT_EQ(md["deepseek2.expert_weights_norm"], true);
  Result<ModelConfig> cfg = config_from_gguf(md);
  ASSERT_TRUE(cfg.ok()) << cfg.status().to_string();
  EXPECT_EQ(cfg->qk_nope_head_dim, 32);
  EXPECT_EQ(cfg->qk_rope_head_dim, 16);
  EXPECT_EQ(cfg->v_head_dim, 32);
  EXPECT_EQ(cfg->kv_lora_rank, 64);
  EXPECT_EQ(cfg->num_key_value_heads, 4);

  EXPECT_FALSE((*g)->find("blk.0.attn_kv_b.weight"));
  const GgufTensorInfo* k_b = (*g)->find("blk.0.attn_k_b.weight");
  const GgufTensorInfo* v_b = (*g)->find("blk.0.attn_v_b.weight");
  ASSERT_TRUE(k_b && v_b);
  EXPECT_EQ(k_b->ne, (std::vector<int64_t>{32, 64, 4}));
  EXPECT_EQ(v_b->ne, (std::vector<int64_t>{64, 32, 4}));
  EXPECT_EQ((*g)->find("blk.1.ffn_gate_inp.weight")->dtype, DType::kF32);
  EXPECT_EQ((*g)->find("blk.1.exp_probs_b.bias")->dtype, DType::kF32);
  EXPECT_FALSE((*g)->find("blk.0.ffn_gate_inp.weight"));  // layer 0 is dense
  const GgufTensorInfo* up = (*g)->find("blk.2.ffn_up_exps.weight");
  ASSERT_TRUE(up);
  ASSERT_EQ(up->ne, (std::vector<int64_t>{256, 64, 16}));
  auto hf = SafetensorsCheckpoint::open_dir(dir / "hf");
  ASSERT_TRUE(hf.ok());
  for (int layer = 0; layer < 3; ++layer) {
    auto kv_b = (*hf)->find(fmt::format("model.layers.{}.self_attn.kv_b_proj.weight", layer))->view();
    ASSERT_TRUE(kv_b.ok());
    const std::string prefix = fmt::format("blk.{}.", layer);
    auto split = split_mla_kv_b(prefix, *kv_b, MlaDims{4, 32, 32});
    ASSERT_TRUE(split.ok()) << split.status().to_string();
    for (const HostTensor& t : *split) {
      const TensorView want = (*g)->find(t.name)->view();
      ASSERT_EQ(t.view.n_bytes(), want.n_bytes()) << t.name;
      EXPECT_EQ(std::memcmp(t.view.data, want.data, want.n_bytes()), 0) << t.name;
    }
  }
  for (int e : {0, 9, 15}) {
    auto ev = (*hf)->find(fmt::format("model.layers.2.mlp.experts.{}.up_proj.weight", e))->view();
    ASSERT_TRUE(ev.ok());
    EXPECT_EQ(std::memcmp(up->data + static_cast<size_t>(e) * 64 * 256 * 4, ev->data, 64 * 256 * 4), 0) << e;
  }
}

// FP8 checkpoints look like the official one (docs/design/formats.md#fp8-e4m3-and-deepseek-block-scales): F8_E4M3
// projections with F32 [ceil(out/128), ceil(in/128)] scales where each block's largest |w| codes to 448; embeddings,
// norms and router BF16, bias F32.
TEST(MkmodelDeepseek, Fp8CheckpointHasBlockScales) {
  TempDir dir;
  make_model("--arch deepseek2 --preset tiny --seed 4 --format hf --dtype fp8 -o " + dir / "fp8");
  make_model("--arch deepseek2 --preset tiny --seed 4 --format hf --dtype f32 -o " + dir / "f32");
  auto c8 = SafetensorsCheckpoint::open_dir(dir / "fp8");
  auto c32 = SafetensorsCheckpoint::open_dir(dir / "f32");
  ASSERT_TRUE(c8.ok() && c32.ok());
  const json cfg = json::parse(test::read_file(dir / "fp8/config.json"));
  EXPECT_EQ(cfg["quantization_config"]["weight_block_size"], json::array({128, 128}));
  EXPECT_EQ(cfg["quantization_config"]["quant_method"], "fp8");
  EXPECT_EQ(cfg["model_type"], "deepseek_v3");
  EXPECT_EQ((*c8)->find("model.embed_tokens.weight")->dtype_name, "BF16");
  EXPECT_EQ((*c8)->find("model.layers.1.mlp.gate.weight")->dtype_name, "BF16");
  EXPECT_EQ((*c8)->find("model.layers.1.mlp.gate.e_score_correction_bias")->dtype_name, "F32");
  EXPECT_EQ((*c8)->find("model.layers.0.input_layernorm.weight")->dtype_name, "BF16");
  EXPECT_FALSE((*c8)->find("model.layers.0.input_layernorm.weight_scale_inv"));
  // q_b_proj [4·48 = 192, 160]: 2 × 2 blocks, partial at both edges.
  const std::string w = "model.layers.0.self_attn.q_b_proj.weight";
  const SafetensorsTensor* t = (*c8)->find(w);
  const SafetensorsTensor* s = (*c8)->find(w + "_scale_inv");
  ASSERT_TRUE(t && s);
  EXPECT_EQ(t->dtype_name, "F8_E4M3");
  EXPECT_EQ(s->shape, (std::vector<int64_t>{2, 2}));
  TensorView v = t->view().value();
  v.scale = reinterpret_cast<const float*>(s->data);
  const TensorView ref = (*c32)->find(w)->view().value();
  float block_max[2][2] = {};
  for (int64_t r = 0; r < 192; ++r) {
    const std::vector<float> got = row_f32(v, r), want = row_f32(ref, r);
    for (int64_t c = 0; c < 160; ++c) {
      const float sc = reinterpret_cast<const float*>(s->data)[(r / 128) * 2 + c / 128];
      float& bm = block_max[r / 128][c / 128];
      bm = std::max(bm, std::fabs(fp8_e4m3_to_f32(t->data[r * 160 + c])));
      EXPECT_LE(std::fabs(got[c] - want[c]), std::fabs(want[c]) / 16 + sc / 512) << r << "," << c;  // e4m3: 3 bits
    }
  }
  for (auto& row : block_max)
    for (float m : row) EXPECT_EQ(m, 448.0f);
}

// The router is random, so tokens spread over the experts: over the vocabulary's embeddings (a stand-in for the
// MoE input) every expert is in some token's top-4, and none takes more than a quarter of the picks.
TEST(MkmodelDeepseek, RoutingIsSpreadOverExperts) {
  TempDir dir;
  make_model("--arch deepseek2 --preset tiny --seed 5 -o " + dir / "m.gguf");
  auto g = GgufFile::open(dir / "m.gguf");
  ASSERT_TRUE(g.ok());
  const TensorView emb = (*g)->find("token_embd.weight")->view();
  const TensorView router = (*g)->find("blk.1.ffn_gate_inp.weight")->view();
  const float* bias = reinterpret_cast<const float*>((*g)->find("blk.1.exp_probs_b.bias")->data);
  std::vector<int> picks(16);
  for (int64_t t = 0; t < emb.rows(); ++t) {
    std::vector<float> x = row_f32(emb, t);
    double ss = 0;
    for (float v : x) ss += v * v;
    for (float& v : x) v /= static_cast<float>(std::sqrt(ss / x.size()));
    std::vector<std::pair<float, int>> score;
    for (int e = 0; e < 16; ++e) {
      const std::vector<float> w = row_f32(router, e);
      double dot = 0;
      for (size_t i = 0; i < x.size(); ++i) dot += w[i] * x[i];
      score.push_back({static_cast<float>(1 / (1 + std::exp(-dot))) + bias[e], e});
    }
    std::partial_sort(score.begin(), score.begin() + 4, score.end(), std::greater<>());
    for (int k = 0; k < 4; ++k) ++picks[static_cast<size_t>(score[static_cast<size_t>(k)].second)];
  }
  const int total = static_cast<int>(emb.rows()) * 4;
  for (int e = 0; e < 16; ++e) {
    EXPECT_GT(picks[static_cast<size_t>(e)], 0) << e;
    EXPECT_LT(picks[static_cast<size_t>(e)], total / 4) << e;
  }
}

// `got` holds the tensors of `want`: the same names, shapes, types and bytes.
void expect_same_tensors(const GgufFile& want, const GgufFile& got) {
  ASSERT_EQ(got.tensors().size(), want.tensors().size());
  for (const GgufTensorInfo& t : want.tensors()) {
    const GgufTensorInfo* u = got.find(t.name);
    ASSERT_TRUE(u) << t.name;
    EXPECT_EQ(u->ne, t.ne) << t.name;
    EXPECT_EQ(u->dtype, t.dtype) << t.name;
    EXPECT_TRUE(u->n_bytes == t.n_bytes && std::memcmp(u->data, t.data, t.n_bytes) == 0) << t.name;
  }
}

// The converter maps every HF name, stacks experts and keys the config exactly as the generator does: converting the
// generator's HF F32 output gives the generator's GGUF F32 tensors bit for bit, and the same tokenizer.
TEST(MkmodelDeepseek, ConvertedHfEqualsGeneratedGguf) {
  TempDir dir;
  for (const std::string& arch : std::vector<std::string>{"deepseek2", "llama", "qwen2"}) {
    SCOPED_TRACE(arch);
    const std::string common = "--arch " + arch + " --preset tiny --seed 8 ";
    make_model(common + "-o " + dir / arch + ".gguf");
    make_model(common + "--format hf --shard-mb 1 -o " + dir / arch);
    make_model("--from " + dir / arch + " -o " + dir / arch + "_conv.gguf");
    auto a = GgufFile::open(dir / arch + ".gguf");
    auto b = GgufFile::open(dir / arch + "_conv.gguf");
    ASSERT_TRUE(a.ok() && b.ok());
    expect_same_tensors(**a, **b);
    const json& ma = (*a)->metadata();
    const json& mb = (*b)->metadata();
    for (const auto& [key, value] : ma.items()) {
      if (key == "general.name" || key == "tokenizer.ggml.token_type" || key == "tokenizer.ggml.eot_token_id") {
        continue;  // the name differs; HF files do not mark unused fillers or ChatML's end-of-turn
      }
      EXPECT_EQ(mb.value(key, json()), value) << key;
    }
  }
}

// Converting the DeepSeek oracle checkpoint writes what mainline llama.cpp's converter wrote for it (its F32 GGUF in
// tests/data): the same tensors, shapes and bytes (attn_k_b / attn_v_b, no attn_kv_b) and the same deepseek2.* keys,
// key_length_mla / value_length_mla included.
TEST(MkmodelDeepseek, ConvertedOracleMatchesMainlineLlamaCppGguf) {
  TempDir dir;
  make_model("--from " + test::data_path("oracle/deepseek_v3_tiny") + " --dtype f32 -o " + dir / "m.gguf");
  auto mine = GgufFile::open(dir / "m.gguf");
  auto ref = GgufFile::open(test::data_path("oracle/deepseek_v3_tiny/mainline.gguf"));
  ASSERT_TRUE(mine.ok() && ref.ok());
  expect_same_tensors(**ref, **mine);
  const json& want = (*ref)->metadata();
  const json& got = (*mine)->metadata();
  int n_keys = 0;
  for (const auto& [key, value] : want.items()) {
    if (!key.starts_with("deepseek2.")) continue;
    EXPECT_EQ(got.value(key, json()), value) << key;
    ++n_keys;
  }
  EXPECT_EQ(n_keys, 32);
  EXPECT_EQ(got["deepseek2.attention.key_length_mla"], 24);
  EXPECT_EQ(got["deepseek2.attention.value_length_mla"], 16);
}

// Llama: the converter's Q/K permutation matches llama.cpp's own conversion of TinyStories-656K (F16) bit for bit.
TEST(MkmodelDeepseek, LlamaConversionMatchesLlamaCppF16) {
  TempDir dir;
  make_model("--from " + test::data_path("models/TinyStories-656K-hf") + " --dtype f16 -o " + dir / "m.gguf");
  auto mine = GgufFile::open(dir / "m.gguf");
  auto ref = GgufFile::open(test::data_path("models/TinyStories-656K.f16.gguf"));
  ASSERT_TRUE(mine.ok() && ref.ok());
  int n_compared = 0;
  for (const GgufTensorInfo& t : (*ref)->tensors()) {
    const GgufTensorInfo* u = (*mine)->find(t.name);
    ASSERT_TRUE(u) << t.name;
    ASSERT_EQ(u->ne, t.ne) << t.name;
    ASSERT_EQ(u->dtype, t.dtype) << t.name;
    EXPECT_EQ(std::memcmp(u->data, t.data, t.n_bytes), 0) << t.name;
    ++n_compared;
  }
  EXPECT_GE(n_compared, 2 * 9 + 2);
  EXPECT_EQ((*mine)->metadata()["llama.rope.dimension_count"], (*ref)->metadata()["llama.rope.dimension_count"]);
  EXPECT_EQ((*mine)->metadata()["llama.attention.head_count_kv"], 4);
}

}  // namespace
}  // namespace cai
