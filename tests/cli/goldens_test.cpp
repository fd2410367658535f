// The `cai` command against published goldens: real trained models (run) and the Qwen2 oracle (eval).
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdlib>

#include "oracle_eval.h"
#include "test_paths.h"

namespace cai {
namespace {

using test::cai_bin;
std::string model(const std::string& name) { return test::data_path("models/" + name); }

std::string run_greedy(const std::string& model_path, const std::string& prompt, int n) {
  test::CommandResult r = test::run_command(cai_bin() + " run -m '" + model_path + "' -p '" + prompt + "' -n " +
                                            std::to_string(n) + " --temp 0");
  EXPECT_EQ(r.exit_code, 0) << r.err;
  return r.out;
}

// tests/data/models/README.md: llama2.c's 64 positions = BOS + 4 prompt tokens + 60 generated.
TEST(Goldens, Stories260K) {
  EXPECT_EQ(run_greedy(model("stories260K.gguf"), "Once upon a time", 60),
            ", there was a little girl named Lily. She loved to play outside in the park. One day, she saw a big, red "
            "ball. She wanted to play with it, but it was too high.\nLily");
}

TEST(Goldens, TinyStoriesQ8_0) {
  EXPECT_EQ(
      run_greedy(model("TinyStories-656K-Q8_0.gguf"), "Once upon a time", 32),
      ", a little girl named Lily lived in a small house. She loved to eat yummy food. One day, she saw a small "
      "bird on the ground. The bird was sad because it could not eat it.\nLily wanted to help the bird. She tried "
      "to eat the food and ");
  EXPECT_EQ(run_greedy(model("TinyStories-656K-Q8_0.gguf"), "Hello", 16),
            " and a girl were walking in the park. One day she saw a small bird flying in the sk");
}

const char* kTinyStoriesFloat =
    ", a little girl named Lily lived in a small house with her mom, dad, and her dog, Spot, Spot, loved to play all "
    "day. One day, Lily saw a small bird on the ground. She picked it up and tried to reach";

TEST(Goldens, TinyStoriesF16) {
  EXPECT_EQ(run_greedy(model("TinyStories-656K.f16.gguf"), "Once upon a time", 32), kTinyStoriesFloat);
  EXPECT_EQ(run_greedy(model("TinyStories-656K.f16.gguf"), "Hello", 16),
            " and a girl were walking in the park. One day she saw a small bird flying in the sk");
}

TEST(Goldens, TinyStoriesHuggingFaceDirectory) {
  EXPECT_EQ(run_greedy(model("TinyStories-656K-hf"), "Once upon a time", 32), kTinyStoriesFloat);
}

using test::expect_oracle;
using test::kMainlineGguf;
using test::kOracles;
using test::max_diff_and_ref;
using test::param_name;

class OracleEval : public ::testing::TestWithParam<std::string> {};

TEST_P(OracleEval, MatchesReferenceLogitsAndGreedyTokens) { expect_oracle(GetParam(), "", "", 1e-4f); }

INSTANTIATE_TEST_SUITE_P(Oracles, OracleEval, ::testing::ValuesIn(kOracles),
                         [](const auto& info) { return param_name(info.param); });
INSTANTIATE_TEST_SUITE_P(Mainline, OracleEval, ::testing::Values(kMainlineGguf),
                         [](const auto& info) { return param_name(info.param); });

// The same references on a device backend: the simt device (the CUDA-dialect kernels on the CPU emulator) at warp
// widths 32 and 64, or the device named by CAI_TEST_DEVICE (scripts/device-check.sh: cuda:0). Every weight,
// activation and table goes through device uploads, the logits through one download per step. An F32 KV cache (not
// the device default, BF16) keeps the parity strict.
class OracleEvalDevice : public ::testing::TestWithParam<std::tuple<std::string, int>> {};

TEST_P(OracleEvalDevice, MatchesReferenceLogitsAndGreedyTokens) {
  const auto& [name, warp] = GetParam();
  const char* device = std::getenv("CAI_TEST_DEVICE");
  expect_oracle(name, "CAI_SIMT_WARP=" + std::to_string(warp),
                std::string("--device ") + (device ? device : "simt:0") + " --kv-dtype f32", 1e-3f);
}

std::string device_param_name(const ::testing::TestParamInfo<std::tuple<std::string, int>>& info) {
  return param_name(std::get<0>(info.param)) + "_warp" + std::to_string(std::get<1>(info.param));
}

INSTANTIATE_TEST_SUITE_P(Oracles, OracleEvalDevice,
                         ::testing::Combine(::testing::ValuesIn(kOracles), ::testing::Values(32, 64)),
                         device_param_name);
// The rebuilt attn_kv_b takes the device upload path; one warp width is enough for that.
INSTANTIATE_TEST_SUITE_P(Mainline, OracleEvalDevice,
                         ::testing::Combine(::testing::Values(std::string(kMainlineGguf)), ::testing::Values(32)),
                         device_param_name);

// A narrower KV cache keeps the references' greedy tokens (every greedy step's reference top-2 margin is >= 3e-3 ×
// max|logit|), logits within rel_tol × max|logit| (F32: OracleEval, measured 5e-7 / 1e-6). Tolerances are about 2× the
// measured max|diff| / max|logit| over prompt and greedy logits, qwen2_tiny / deepseek_v3_tiny: BF16 2.6e-3 / 3.9e-3
// (CPU and the simt device's default alike), F16 4.0e-4 / 4.2e-4, Q8_0 8.7e-3 (GQA only: deepseek_v3_tiny's 8-wide
// k_rope is not whole Q8_0 blocks; MlaQ8_0KvTracksF32Kv covers the latent cache).
struct KvDtypeCase {
  std::string model, args;
  float rel_tol;
};

class OracleEvalKvDtype : public ::testing::TestWithParam<KvDtypeCase> {};

TEST_P(OracleEvalKvDtype, KeepsGreedyTokensLogitsClose) {
  expect_oracle(GetParam().model, "", GetParam().args, 0.0f, GetParam().rel_tol);
}

INSTANTIATE_TEST_SUITE_P(Oracles, OracleEvalKvDtype,
                         ::testing::Values(KvDtypeCase{"qwen2_tiny", "--kv-dtype bf16", 8e-3f},
                                           KvDtypeCase{"qwen2_tiny", "--kv-dtype f16", 1e-3f},
                                           KvDtypeCase{"qwen2_tiny", "--kv-dtype q8_0", 2e-2f},
                                           KvDtypeCase{"qwen2_tiny", "--device simt:0", 8e-3f},
                                           KvDtypeCase{"deepseek_v3_tiny", "--kv-dtype bf16", 8e-3f},
                                           KvDtypeCase{"deepseek_v3_tiny", "--kv-dtype f16", 1e-3f},
                                           KvDtypeCase{"deepseek_v3_tiny", "--device simt:0", 8e-3f}),
                         [](const auto& info) {
                           return param_name(info.param.model) + "_" + param_name(info.param.args);
                         });

// kv_bytes_per_token and kv_dtype of `cai eval --json` on `model` with `args`.
std::pair<int64_t, std::string> kv_of(const std::string& model, const std::string& args) {
  test::CommandResult r =
      test::run_command(cai_bin() + " eval -m " + test::data_path("oracle/" + model) + " --tokens 0 --json " + args);
  EXPECT_EQ(r.exit_code, 0) << r.err;
  const nlohmann::json out = nlohmann::json::parse(test::last_line(r.out));
  return {out["kv_bytes_per_token"].get<int64_t>(), out["kv_dtype"].get<std::string>()};
}

// The KV cache is F32 on the CPU and BF16 on a device with its own memory (simt) unless --kv-dtype says otherwise;
// the half-width dtypes halve the bytes per token.
TEST(Goldens, KvDtypeDefaultsPerDeviceAndHalvesBytesPerToken) {
  for (const char* model : {"qwen2_tiny", "deepseek_v3_tiny"}) {
    SCOPED_TRACE(model);
    const auto [f32_bytes, cpu_dtype] = kv_of(model, "");
    EXPECT_EQ(cpu_dtype, "f32");
    EXPECT_EQ(kv_of(model, "--device simt:0"), std::pair(f32_bytes / 2, std::string("bf16")));
    EXPECT_EQ(kv_of(model, "--kv-dtype bf16"), std::pair(f32_bytes / 2, std::string("bf16")));
    EXPECT_EQ(kv_of(model, "--kv-dtype f16"), std::pair(f32_bytes / 2, std::string("f16")));
    EXPECT_EQ(kv_of(model, "--device simt:0 --kv-dtype f32"), std::pair(f32_bytes, std::string("f32")));
  }
}

nlohmann::json oracle_config(const std::string& model) {
  return nlohmann::json::parse(test::read_file(test::data_path("oracle/" + model + "/config.json")));
}

// KV bytes per token, all layers, by hand from config.json. GQA caches K and V rows of num_key_value_heads × head_dim;
// MLA only [c_kv | k_rope] (kv_lora_rank + qk_rope_head_dim). F32 4 bytes, F16 / BF16 2, Q8_0 34 per 32 elements.
TEST(Goldens, KvBytesPerTokenFollowsConfig) {
  const nlohmann::json q = oracle_config("qwen2_tiny");
  const int64_t q_elems = q["num_hidden_layers"].get<int64_t>() * 2 * q["num_key_value_heads"].get<int64_t>() *
                          (q["hidden_size"].get<int64_t>() / q["num_attention_heads"].get<int64_t>());
  EXPECT_EQ(q_elems, 3 * 2 * 2 * 32);
  EXPECT_EQ(kv_of("qwen2_tiny", "").first, q_elems * 4);
  EXPECT_EQ(kv_of("qwen2_tiny", "--kv-dtype f16").first, q_elems * 2);
  EXPECT_EQ(kv_of("qwen2_tiny", "--kv-dtype q8_0"), std::pair(q_elems / 32 * 34, std::string("q8_0")));
  const nlohmann::json d = oracle_config("deepseek_v3_tiny");
  const int64_t d_elems =
      d["num_hidden_layers"].get<int64_t>() * (d["kv_lora_rank"].get<int64_t>() + d["qk_rope_head_dim"].get<int64_t>());
  EXPECT_EQ(d_elems, 4 * (32 + 8));
  EXPECT_EQ(kv_of("deepseek_v3_tiny", "").first, d_elems * 4);
  EXPECT_EQ(kv_of("deepseek_v3_tiny", "--kv-dtype bf16").first, d_elems * 2);
}

// A Q8_0 latent cache on R1's latent widths (kv_lora_rank 512 + qk_rope_head_dim 64; one dense MLA layer of a random
// cai-mkmodel DeepSeek, which F32 runs like the references) against the same model with an F32 cache: greedy tokens
// equal (reference top-2 margins >= 1.2e-2 × max|logit|), logits within 1.5e-2 × max|logit| (measured 6.6e-3; BF16
// 2.0e-3, F16 2.6e-4), 18 blocks × 34 bytes per token.
TEST(Goldens, MlaQ8_0KvTracksF32Kv) {
  const std::string dir = test::make_temp_dir("mla_q8");
  const std::string model = dir + "/m.gguf";
  test::CommandResult mk = test::run_command(test::binary_path("cai-mkmodel") +
                                             " --arch deepseek2 --preset deepseek-v2-lite --layers 1 --hidden 256 "
                                             "--heads 2 --ffn 256 --vocab 300 --ctx 512 --seed 5 -o " +
                                             model);
  ASSERT_EQ(mk.exit_code, 0) << mk.err;
  auto eval = [&](const std::string& kv, const std::string& logits) {
    test::CommandResult r = test::run_command(cai_bin() + " eval -m " + model + " --kv-dtype " + kv +
                                              " --tokens 3,141,59,26,53,58,97,93,238,46 --greedy 8 --gen-logits " +
                                              logits + " --logits " + logits + ".prompt --json");
    EXPECT_EQ(r.exit_code, 0) << r.err;
    return nlohmann::json::parse(test::last_line(r.out));
  };
  const nlohmann::json f32 = eval("f32", dir + "/f32"), q8 = eval("q8_0", dir + "/q8");
  EXPECT_EQ(q8["kv_bytes_per_token"], (512 + 64) / 32 * 34);
  EXPECT_EQ(q8["greedy"], f32["greedy"]);
  for (const char* suffix : {"", ".prompt"}) {
    const auto [max_diff, max_ref] =
        max_diff_and_ref(test::read_f32(dir + "/q8" + suffix), test::read_f32(dir + "/f32" + suffix));
    EXPECT_LE(max_diff, 1.5e-2f * max_ref) << suffix;
  }
}

}  // namespace
}  // namespace cai
