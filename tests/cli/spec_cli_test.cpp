// `cai eval` with speculative decoding: `--greedy N --spec mtp|ngram|draft` prints the greedy list decoding without
// it prints, on every oracle and the real tiny models; `--mtp-logits` writes the MTP module's prompt logits as the
// float64 reference has them, from the HF checkpoint and from its cai-mkmodel GGUF; bad combinations fail cleanly.
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <cstdlib>
#include <map>

#include "oracle_eval.h"
#include "test_paths.h"

namespace cai {
namespace {

using nlohmann::json;
using test::cai_bin;

const std::string kMtp = "oracle/deepseek_v3_tiny_mtp";

std::string join_ids(const std::vector<int>& ids) {
  std::string s;
  for (int t : ids) s += (s.empty() ? "" : ",") + std::to_string(t);
  return s;
}

// The device under test: the CPU, or CAI_TEST_DEVICE (scripts/device-check.sh: cuda:0) with an F32 KV cache.
std::string device_args() {
  const char* device = std::getenv("CAI_TEST_DEVICE");
  return device ? std::string(" --device ") + device + " --kv-dtype f32" : "";
}

json spec_eval_json(const std::string& model, const std::string& ids, const std::string& extra) {
  const test::CommandResult r = test::run_command(cai_bin() + " eval -m '" + model + "' --tokens " + ids + " " + extra +
                                                  device_args() + " --json");
  EXPECT_EQ(r.exit_code, 0) << extra << "\n" << r.err;
  return r.exit_code == 0 ? json::parse(test::last_line(r.out)) : json{};
}

struct Counts {
  int64_t drafted = 0, accepted = 0;
};

// Greedy tokens of `model` after `ids`, plain and with each speculative method in `specs`; adds up the drafts.
void expect_same_greedy(const std::string& model, const std::string& ids, int n, const std::vector<std::string>& specs,
                        std::map<std::string, Counts>& counts) {
  const json plain = spec_eval_json(model, ids, "--greedy " + std::to_string(n));
  ASSERT_EQ(plain["greedy"].size(), static_cast<size_t>(n));
  for (const std::string& spec : specs) {
    const json s = spec_eval_json(model, ids, "--greedy " + std::to_string(n) + " " + spec);
    EXPECT_EQ(s["greedy"], plain["greedy"]) << model << " " << spec;
    counts[spec].drafted += s["spec"]["drafted"].get<int64_t>();
    counts[spec].accepted += s["spec"]["accepted"].get<int64_t>();
  }
}

class SpecOracle : public ::testing::TestWithParam<std::string> {};

TEST_P(SpecOracle, GreedyListIsTheOneWithoutSpeculation) {
  const std::string name = GetParam();
  const std::string model = test::data_path("oracle/" + name);
  const std::string dir = name.ends_with(".gguf") ? model.substr(0, model.rfind('/')) : model;
  // The model as its own draft model: every draft is accepted, so every verification path runs.
  std::vector<std::string> specs = {"--spec ngram --spec-tokens 3", "--spec ngram --spec-tokens 1 --spec-ngram-max 1",
                                    "--spec draft --spec-tokens 4 --draft-model '" + model + "'"};
  if (name == "deepseek_v3_tiny_mtp") specs.insert(specs.end(), {"--spec mtp --spec-tokens 1", "--spec mtp"});
  const json spec = json::parse(test::read_file(dir + "/tokens.json"));
  std::map<std::string, Counts> counts;
  for (const auto& p : spec["prompts"]) expect_same_greedy(model, join_ids(p["input_ids"]), 24, specs, counts);
  for (const std::string& s : specs) EXPECT_GT(counts[s].drafted, 0) << s << ": nothing was verified";
  const Counts& self = counts[specs[2]];
  EXPECT_EQ(self.accepted, self.drafted) << "the model drafting for itself";
}

INSTANTIATE_TEST_SUITE_P(Oracles, SpecOracle,
                         ::testing::Values("qwen2_tiny", "deepseek_v3_tiny", "deepseek_v3_tiny/fp8",
                                           "deepseek_v3_tiny/q_lora_none", "llama3_scaled_tiny",
                                           "deepseek_v3_tiny/mainline.gguf", "deepseek_v3_tiny_mtp"),
                         [](const auto& info) { return test::param_name(info.param); });

// Trained models repeat themselves, so prompt lookup gets drafts accepted: the verified tokens must still be the
// model's own.
TEST(SpecRealModels, PromptLookupKeepsTheGreedyContinuation) {
  std::map<std::string, Counts> counts;
  for (const char* m :
       {"models/TinyStories-656K-Q8_0.gguf", "models/TinyStories-656K.f16.gguf", "models/stories260K.gguf"}) {
    const std::string model = test::data_path(m);
    const test::CommandResult tok = test::run_command(
        cai_bin() + " tokenize -m '" + model + "' -p 'Once upon a time there was a girl. Once upon a time' --bos");
    ASSERT_EQ(tok.exit_code, 0) << tok.err;
    const std::string ids = join_ids(json::parse(test::last_line(tok.out))["ids"].get<std::vector<int>>());
    expect_same_greedy(model, ids, 48, {"--spec ngram", "--spec ngram --spec-tokens 6 --spec-ngram-min 2"}, counts);
  }
  // The F16 file drafting for its Q8_0 quantization and the other way round.
  const std::string q8 = test::data_path("models/TinyStories-656K-Q8_0.gguf");
  const std::string f16 = test::data_path("models/TinyStories-656K.f16.gguf");
  // "Once upon a time there was a girl. Once upon a time"
  const std::string ids = "1,80,147,201,282,81,286,1132,84,147,201,282,57";
  expect_same_greedy(q8, ids, 48, {"--spec draft --draft-model " + f16}, counts);
  expect_same_greedy(f16, ids, 48, {"--spec draft --spec-tokens 5 --draft-model " + q8}, counts);
  for (const auto& [spec, c] : counts) EXPECT_GT(c.accepted, 0) << spec;
}

// Row i of --mtp-logits: the module fed token i+1 and the main model's final-norm hidden state at i. On the CPU, or
// with CAI_TEST_DEVICE on that device (1e-3 there, as the other device oracles).
TEST(MtpLogits, MatchTheReferenceFromSafetensorsAndFromTheConvertedGguf) {
  const std::string dir = test::data_path(kMtp), tmp = test::make_temp_dir("mtp");
  const std::string gguf = tmp + "/mtp.gguf";
  const test::CommandResult conv =
      test::run_command(test::binary_path("cai-mkmodel") + " --from '" + dir + "' --dtype f32 -o " + gguf);
  ASSERT_EQ(conv.exit_code, 0) << conv.out << conv.err;
  const json spec = json::parse(test::read_file(dir + "/tokens.json"));
  for (const std::string& model : {dir, gguf}) {
    for (const auto& p : spec["prompts"]) {
      const std::string out = tmp + "/mtp.f32";
      const json r = spec_eval_json(model, join_ids(p["input_ids"]), "--mtp-logits " + out);
      const std::vector<float> ref = test::read_f32(dir + "/" + p["mtp_logits_file"].get<std::string>());
      const auto [diff, max_ref] = test::max_diff_and_ref(test::read_f32(out), ref);
      EXPECT_LE(diff, device_args().empty() ? 1e-4f : 1e-3f) << model << " " << p["name"];
      EXPECT_EQ(r["greedy"].size(), 0u);
    }
    std::map<std::string, Counts> counts;
    expect_same_greedy(model, join_ids(spec["prompts"][2]["input_ids"]), 16, {"--spec mtp --spec-tokens 2"}, counts);
    EXPECT_GT(counts.begin()->second.drafted, 0);
  }
}

// The module over several devices runs as the layers do: tensor parallel (its block's heads and experts split, its
// eh_proj and norms on every rank, the head's vocabulary rows per rank), expert parallel, or on the last pipeline
// stage. Its logits match the reference, and speculative greedy decoding at --tp 2 gives the plain greedy list.
TEST(MtpLogits, MatchTheReferenceOverSeveralDevices) {
  const std::string dir = test::data_path(kMtp), tmp = test::make_temp_dir("mtp_layouts");
  const json spec = json::parse(test::read_file(dir + "/tokens.json"));
  const json& p = spec["prompts"][2];
  const std::string ids = join_ids(p["input_ids"]);
  const std::vector<float> ref = test::read_f32(dir + "/" + p["mtp_logits_file"].get<std::string>());
  auto eval = [&](const std::string& layout, const std::string& extra) {
    const test::CommandResult r =
        test::run_command("CAI_SIMT_DEVICES=2 " + cai_bin() + " eval -m '" + dir + "' --tokens " + ids +
                          " --kv-dtype f32 --json " + layout + " " + extra);
    EXPECT_EQ(r.exit_code, 0) << layout << " " << extra << "\n" << r.err;
    return r.exit_code == 0 ? json::parse(test::last_line(r.out)) : json{};
  };
  for (const std::string layout : {"--device simt:0,simt:1 --tp 2", "--device cpu,simt:0 --tp 2",
                                   "--device simt:0,simt:1 --ep 2", "--device simt:0,simt:1 --pp 2"}) {
    const std::string out = tmp + "/mtp.f32";
    eval(layout, "--mtp-logits " + out);
    const auto [diff, max_ref] = test::max_diff_and_ref(test::read_f32(out), ref);
    EXPECT_LE(diff, 1e-4f) << layout;
  }
  const json plain = eval("--device simt:0,simt:1 --tp 2", "--greedy 12");
  const json drafted = eval("--device simt:0,simt:1 --tp 2", "--greedy 12 --spec mtp --spec-tokens 2");
  EXPECT_EQ(drafted["greedy"], plain["greedy"]);
  EXPECT_GT(drafted["spec"]["drafted"].get<int>(), 0);
}

// cai-mkmodel --mtp writes a random DeepSeek model with an MTP module (GGUF nextn tensors, or R1's HF names): it
// loads, drafts, and speculative greedy decoding gives the plain greedy list.
TEST(MtpModels, CaiMkmodelWritesAModuleThatDrafts) {
  const std::string tmp = test::make_temp_dir("mkmtp");
  std::map<std::string, Counts> counts;
  for (const std::string& out : {tmp + "/tiny.gguf", tmp + "/tiny_hf"}) {
    const std::string format = out.ends_with(".gguf") ? "--format gguf --dtype f32" : "--format hf --dtype bf16";
    const test::CommandResult r = test::run_command(test::binary_path("cai-mkmodel") +
                                                    " --arch deepseek2 --preset tiny --mtp " + format + " -o " + out);
    ASSERT_EQ(r.exit_code, 0) << r.err;
    expect_same_greedy(out, "1,5,9,5,9", 16, {"--spec mtp --spec-tokens 2"}, counts);
  }
  EXPECT_GT(counts.begin()->second.drafted, 0);
  const test::CommandResult llama =
      test::run_command(test::binary_path("cai-mkmodel") + " --arch qwen2 --mtp -o " + tmp + "/q.gguf");
  EXPECT_NE(llama.err.find("--mtp: only DeepSeek models"), std::string::npos) << llama.err;
}

TEST(SpecCli, BadCombinationsFailCleanly) {
  const std::string plain = test::data_path("oracle/deepseek_v3_tiny");
  struct Case {
    std::string args, message;
  };
  const std::vector<Case> cases = {
      {"eval -m " + plain + " --tokens 0,5 --greedy 4 --spec mtp", "no multi-token-prediction module"},
      {"eval -m " + plain + " --tokens 0,5 --mtp-logits /tmp/x.f32", "no multi-token-prediction module"},
      {"eval -m " + plain + " --tokens 0,5 --greedy 4 --spec fast", "expected off, ngram, mtp or draft"},
      {"eval -m " + plain + " --tokens 0,5 --greedy 4 --spec ngram --spec-tokens 0", "--spec-tokens 0"},
      {"eval -m " + plain + " --tokens 0,5 --greedy 4 --spec ngram --spec-ngram-min 3 --spec-ngram-max 2",
       "min <= max"},
      {"eval -m " + plain + " --tokens 0,5 --greedy 4 --spec ngram --gen-logits /tmp/g.f32", "--gen-logits"},
      {"eval -m " + plain + " --tokens 0,5 --greedy 4 --spec draft", "--spec draft needs --draft-model"},
      {"eval -m " + plain + " --tokens 0,5 --greedy 4 --spec draft --draft-model " +
           test::data_path("models/TinyStories-656K-Q8_0.gguf"),
       "a draft model must share the vocabulary"},
      {"eval -m " + test::data_path("models/TinyStories-656K-Q8_0.gguf") +
           " --tokens 1,5 --greedy 4 --spec draft "
           "--draft-model " +
           test::data_path("models/stories260K.gguf"),
       "its tokenizer has 512 tokens"},
  };
  for (const Case& c : cases) {
    const test::CommandResult r = test::run_command(cai_bin() + " " + c.args);
    EXPECT_EQ(r.exit_code, 1) << c.args;
    EXPECT_NE(r.err.find(c.message), std::string::npos) << c.args << "\n" << r.err;
  }
}

}  // namespace
}  // namespace cai
