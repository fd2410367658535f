// cai-mkmodel --from: an HF checkpoint converted to GGUF gives the same logits and greedy tokens as the HF load.
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <cmath>

#include "test_paths.h"

namespace cai {
namespace {

using nlohmann::json;

struct EvalResult {
  json greedy;
  std::vector<float> logits, gen_logits;
};

// `cai eval` of `tokens` (comma-separated ids) on a model; 8 greedy steps.
EvalResult eval(const std::string& model, const std::string& tokens, const std::string& tmp, const std::string& tag) {
  const std::string logits = tmp + "/" + tag + "_logits.f32", gen = tmp + "/" + tag + "_gen.f32";
  const test::CommandResult r =
      test::run_command(test::binary_path("cai") + " eval -m '" + model + "' --tokens " + tokens +
                        " --greedy 8 --logits " + logits + " --gen-logits " + gen + " --json");
  EXPECT_EQ(r.exit_code, 0) << r.err;
  if (r.exit_code != 0) return {};
  return {json::parse(test::last_line(r.out))["greedy"], test::read_f32(logits), test::read_f32(gen)};
}

float max_abs_diff(const std::vector<float>& a, const std::vector<float>& b) {
  EXPECT_EQ(a.size(), b.size());
  float m = 0;
  for (size_t i = 0; i < a.size() && i < b.size(); ++i) m = std::max(m, std::fabs(a[i] - b[i]));
  return m;
}

// Converts `hf_dir` with `args`; returns the GGUF path.
std::string convert(const std::string& hf_dir, const std::string& tmp, const std::string& args) {
  const std::string out = tmp + "/model.gguf";
  const test::CommandResult r =
      test::run_command(test::binary_path("cai-mkmodel") + " --from '" + hf_dir + "' " + args + " -o " + out);
  EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
  return out;
}

std::string join_ids(const json& ids) {
  std::string s;
  for (const auto& t : ids) s += (s.empty() ? "" : ",") + std::to_string(t.get<int>());
  return s;
}

class ConvertOracle : public ::testing::TestWithParam<std::string> {};

// The issue: "The same model converted to GGUF deepseek2 gives the same logits as the safetensors load". F32 keeps
// BF16 and FP8 (× block scale) weights exact, so the two loads compute the same model.
TEST_P(ConvertOracle, GgufF32GivesTheLogitsOfTheSafetensorsLoad) {
  const std::string dir = test::data_path("oracle/" + GetParam());
  const std::string tmp = test::make_temp_dir("convert");
  const std::string gguf = convert(dir, tmp, "--dtype f32");
  const json spec = json::parse(test::read_file(dir + "/tokens.json"));
  for (const auto& p : spec["prompts"]) {
    SCOPED_TRACE(p["name"].get<std::string>());
    const std::string ids = join_ids(p["input_ids"]);
    const EvalResult hf = eval(dir, ids, tmp, "hf");
    const EvalResult gg = eval(gguf, ids, tmp, "gguf");
    ASSERT_FALSE(hf.logits.empty());
    ASSERT_FALSE(gg.logits.empty());
    EXPECT_LE(max_abs_diff(gg.logits, hf.logits), 1e-4f);
    EXPECT_LE(max_abs_diff(gg.gen_logits, hf.gen_logits), 1e-4f);
    EXPECT_EQ(gg.greedy, hf.greedy);
    EXPECT_EQ(gg.greedy, p["greedy_next_tokens"]);
  }
}

INSTANTIATE_TEST_SUITE_P(Oracles, ConvertOracle,
                         ::testing::Values("deepseek_v3_tiny", "deepseek_v3_tiny/fp8", "deepseek_v3_tiny/q_lora_none",
                                           "deepseek_v3_tiny_mtp", "qwen2_tiny"),
                         [](const auto& info) {
                           std::string n = info.param;
                           for (char& c : n)
                             if (c == '/') c = '_';
                           return n;
                         });

// Llama needs its q/k rows permuted (and GGUF RoPE in interleaved pairs): the converted TinyStories must still give
// the HF logits. Its tokenizer (SentencePiece-style BPE) is not converted, which the tool says.
TEST(Convert, LlamaGgufGivesTheLogitsOfTheSafetensorsLoad) {
  const std::string dir = test::data_path("models/TinyStories-656K-hf");
  const std::string tmp = test::make_temp_dir("convert");
  const std::string out = tmp + "/model.gguf";
  const test::CommandResult r =
      test::run_command(test::binary_path("cai-mkmodel") + " --from '" + dir + "' --dtype f32 -o " + out);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("tokenizer: none (tokenizer.json: BPE with byte_fallback"), std::string::npos) << r.out;
  const std::string ids = "1,403,261,1078,327,1542,3,1161";
  const EvalResult hf = eval(dir, ids, tmp, "hf");
  const EvalResult gg = eval(out, ids, tmp, "gguf");
  ASSERT_FALSE(gg.logits.empty());
  EXPECT_LE(max_abs_diff(gg.logits, hf.logits), 1e-4f);
  EXPECT_EQ(gg.greedy, hf.greedy);
}

// A quantized conversion runs and stays near the float model (Q8_0: relative error well under a few percent).
TEST(Convert, DeepSeekQ8_0StaysCloseToTheFloatModel) {
  const std::string dir = test::data_path("oracle/deepseek_v3_tiny");
  const std::string tmp = test::make_temp_dir("convert");
  const std::string gguf = convert(dir, tmp, "--dtype q8_0");
  const EvalResult hf = eval(dir, "0,238,36,210,222,118,170", tmp, "hf");
  const EvalResult gg = eval(gguf, "0,238,36,210,222,118,170", tmp, "q8");
  ASSERT_FALSE(gg.logits.empty());
  float max_logit = 0;
  for (float v : hf.logits) max_logit = std::max(max_logit, std::fabs(v));
  EXPECT_GT(max_abs_diff(gg.logits, hf.logits), 0.0f);  // really quantized
  EXPECT_LE(max_abs_diff(gg.logits, hf.logits), 0.05f * max_logit);
}

TEST(Convert, RejectsWhatItCannotConvert) {
  const std::string tmp = test::make_temp_dir("convert");
  const std::string bin = test::binary_path("cai-mkmodel");
  test::CommandResult r = test::run_command(bin + " --from " + tmp + " -o " + tmp + "/x.gguf");
  EXPECT_NE(r.exit_code, 0);
  EXPECT_NE(r.err.find("config.json"), std::string::npos) << r.err;
  r = test::run_command(bin + " --from " + test::data_path("oracle/qwen2_tiny") + " --format hf -o " + tmp + "/x");
  EXPECT_NE(r.exit_code, 0);
  EXPECT_NE(r.err.find("gguf only"), std::string::npos) << r.err;
}

}  // namespace
}  // namespace cai
