// The `cai` command against published goldens: real trained models (run) and the Qwen2 oracle (eval).
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <cctype>
#include <cmath>
#include <cstdlib>

#include "test_paths.h"

namespace cai {
namespace {

std::string cai_bin() { return test::binary_path("cai"); }
std::string model(const std::string& name) { return test::data_path("models/" + name); }

std::string run_greedy(const std::string& model_path, const std::string& prompt, int n) {
  test::CommandResult r =
      test::run_command(cai_bin() + " run -m '" + model_path + "' -p '" + prompt + "' -n " + std::to_string(n) + " --temp 0");
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
  EXPECT_EQ(run_greedy(model("TinyStories-656K-Q8_0.gguf"), "Once upon a time", 32),
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

// tests/data/oracle/*: the 8 greedy tokens and logits within tol + rel_tol × max|reference logit| (per file), for every
// prompt; decode runs one token per step through the KV cache (the latent cache for DeepSeek). `device_args` picks the
// device and KV dtype, e.g. "--device simt:0 --kv-dtype f32" (with CAI_SIMT_WARP in `env`).
void expect_oracle(const std::string& name, const std::string& env, const std::string& device_args, float tol,
                   float rel_tol = 0.0f) {
  const std::string dir = test::data_path("oracle/" + name);
  const nlohmann::json spec = nlohmann::json::parse(test::read_file(dir + "/tokens.json"));
  const std::string tmp = test::make_temp_dir("eval");
  for (const auto& p : spec["prompts"]) {
    std::string toks;
    for (const auto& t : p["input_ids"]) toks += (toks.empty() ? "" : ",") + std::to_string(t.get<int>());
    const std::string logits = tmp + "/logits.f32", gen = tmp + "/gen.f32";
    test::CommandResult r = test::run_command(env + " " + cai_bin() + " eval -m " + dir + " " + device_args + " --tokens " +
                                              toks + " --greedy 8 --logits " + logits + " --gen-logits " + gen + " --json");
    ASSERT_EQ(r.exit_code, 0) << r.err;
    const nlohmann::json out = nlohmann::json::parse(r.out.substr(r.out.rfind('{')));
    EXPECT_EQ(out["greedy"], p["greedy_next_tokens"]) << p["name"];
    EXPECT_EQ(out["n_vocab"], spec["vocab_size"]);
    for (const auto& [mine, theirs] : {std::pair{logits, p["logits_file"]}, std::pair{gen, p["gen_logits_file"]}}) {
      std::vector<float> a = test::read_f32(mine), b = test::read_f32(dir + "/" + theirs.get<std::string>());
      ASSERT_EQ(a.size(), b.size()) << theirs;
      float max_diff = 0, max_ref = 0;
      for (size_t i = 0; i < a.size(); ++i) {
        max_diff = std::max(max_diff, std::fabs(a[i] - b[i]));
        max_ref = std::max(max_ref, std::fabs(b[i]));
      }
      EXPECT_LE(max_diff, tol + rel_tol * max_ref) << p["name"] << " " << theirs;
    }
  }
}

std::string param_name(std::string n) {
  for (char& c : n) if (!std::isalnum(static_cast<unsigned char>(c))) c = '_';
  return n;
}

const std::vector<std::string> kOracles = {"qwen2_tiny", "deepseek_v3_tiny", "deepseek_v3_tiny/fp8", "deepseek_v3_tiny/q_lora_none",
                                "llama3_scaled_tiny"};

class OracleEval : public ::testing::TestWithParam<std::string> {};

TEST_P(OracleEval, MatchesReferenceLogitsAndGreedyTokens) { expect_oracle(GetParam(), "", "", 1e-4f); }

INSTANTIATE_TEST_SUITE_P(Oracles, OracleEval, ::testing::ValuesIn(kOracles),
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

INSTANTIATE_TEST_SUITE_P(Oracles, OracleEvalDevice, ::testing::Combine(::testing::ValuesIn(kOracles), ::testing::Values(32, 64)),
                         [](const auto& info) {
                           return param_name(std::get<0>(info.param)) + "_warp" + std::to_string(std::get<1>(info.param));
                         });

// A half-width KV cache (BF16 or F16 on the CPU; the simt device's default, BF16) keeps the references' greedy tokens,
// logits within 2e-2 × max|logit|.
class OracleEvalHalfKv : public ::testing::TestWithParam<std::tuple<std::string, std::string>> {};

TEST_P(OracleEvalHalfKv, KeepsGreedyTokensLogitsClose) {
  const auto& [name, args] = GetParam();
  expect_oracle(name, "", args, 0.0f, 2e-2f);
}

INSTANTIATE_TEST_SUITE_P(Oracles, OracleEvalHalfKv,
                         ::testing::Combine(::testing::Values("qwen2_tiny", "deepseek_v3_tiny"),
                                            ::testing::Values("--kv-dtype bf16", "--kv-dtype f16", "--device simt:0")),
                         [](const auto& info) {
                           return param_name(std::get<0>(info.param)) + "_" + param_name(std::get<1>(info.param));
                         });

// kv_bytes_per_token and kv_dtype of `cai eval --json` on `model` with `args`.
std::pair<int64_t, std::string> kv_of(const std::string& model, const std::string& args) {
  test::CommandResult r = test::run_command(cai_bin() + " eval -m " + test::data_path("oracle/" + model) +
                                            " --tokens 0 --json " + args);
  EXPECT_EQ(r.exit_code, 0) << r.err;
  const nlohmann::json out = nlohmann::json::parse(r.out.substr(r.out.rfind('{')));
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

// MLA caches only [c_kv | k_rope] per token and layer: (kv_lora_rank + qk_rope_head_dim) × 4 layers × 4 bytes (F32).
TEST(Goldens, DeepSeekKvBytesPerTokenFollowsMlaFormula) {
  test::CommandResult r = test::run_command(cai_bin() + " eval -m " + test::data_path("oracle/deepseek_v3_tiny") +
                                            " --tokens 0 --json");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(nlohmann::json::parse(r.out)["kv_bytes_per_token"], (32 + 8) * 4 * 4);
}

}  // namespace
}  // namespace cai
