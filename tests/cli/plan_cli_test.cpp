// `cai plan`: the JSON contract (keys, the R1 numbers) and clear failures for bad presets, chips and card counts.
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "test_paths.h"

namespace cai {
namespace {

test::CommandResult plan(const std::string& args) {
  return test::run_command(test::binary_path("cai") + " plan " + args);
}

TEST(PlanCli, R1OnEightH200Json) {
  const test::CommandResult r = plan("-m preset:deepseek-r1 --chip h200 --cards 8 --json");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const nlohmann::json j = nlohmann::json::parse(r.out);
  for (const char* key :
       {"fits", "weights_bytes", "weights_bytes_per_card", "kv_bytes_per_token", "max_context", "max_batch",
        "decode_tok_s", "prefill", "layout", "kv_offload_layers", "warnings", "assumptions"})
    EXPECT_TRUE(j.contains(key)) << key;
  EXPECT_EQ(j["chip"]["id"], "nvidia-h200-sxm");
  EXPECT_TRUE(j["fits"].get<bool>());
  EXPECT_EQ(j["kv_bytes_per_token"], 70272);
  EXPECT_EQ(j["layout"]["tensor_parallel"], 8);
  EXPECT_EQ(j["layout"]["expert_parallel"], 8);
  EXPECT_EQ(j["layout"]["experts_per_card"], 32);
  EXPECT_GT(j["decode_tok_s"]["per_sequence"].get<double>(), 0);
  EXPECT_TRUE(j["warnings"].is_array());
}

TEST(PlanCli, TableAndAscendWithoutBandwidth) {
  const test::CommandResult r = plan("-m preset:deepseek-r1 --chip ascend-910b2 --cards 8");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("NO"), std::string::npos);
  EXPECT_NE(r.out.find("at least 16 cards"), std::string::npos);
  EXPECT_NE(r.out.find("FP8 weights"), std::string::npos);
  const nlohmann::json j =
      nlohmann::json::parse(plan("-m preset:deepseek-r1 --chip ascend-910b2 --cards 8 --json").out);
  EXPECT_TRUE(j["decode_tok_s"].is_null());
}

TEST(PlanCli, GgufFile) {
  const test::CommandResult r =
      plan("-m " + test::data_path("models/TinyStories-656K-Q8_0.gguf") + " --chip nvidia-h100-sxm5 --cards 1 --json");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(nlohmann::json::parse(r.out)["model"]["format"], "gguf");
}

// --chip host: the CPU's own profile (here a Kunpeng 920 host's /proc), its memory from meminfo and a bandwidth
// measured on this machine.
TEST(PlanCli, HostChipIsThisMachinesCpu) {
  const std::string env = "CAI_PROC_ROOT=" + test::data_path("chips/proc-kunpeng") +
                          " CAI_SYSFS_ROOT=" + test::data_path("chips/sysfs-ascend-kunpeng") + " ";
  const test::CommandResult r =
      test::run_command(env + test::binary_path("cai") + " plan -m " +
                        test::data_path("models/TinyStories-656K-Q8_0.gguf") + " --chip host --cards 1 -t 1 --json");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const nlohmann::json j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j["chip"]["id"], "cpu-kunpeng-920");
  EXPECT_TRUE(j["chip"]["name"].get<std::string>().starts_with("this host: HiSilicon Kunpeng 920")) << j["chip"];
  EXPECT_DOUBLE_EQ(j["chip"]["memory_gib"].get<double>(), 1008.0);  // 1056964608 kB
  EXPECT_GT(j["chip"]["bandwidth_gbs"].get<double>(), 0.1);
  EXPECT_NE(j["chip"]["bandwidth_gbs"].get<double>(), 187.7);  // measured, not the profile's peak
  EXPECT_GT(j["decode_tok_s"]["per_sequence"].get<double>(), 0);
}

// The H200's speeds use the efficiency CAI measured there (its profile's measured_efficiency, from the device-check
// runs), the entry of the weight type nearest in bits when there is none for the model's own, and say so.
TEST(PlanCli, H200SpeedsUseTheMeasuredEfficiency) {
  const nlohmann::json j =
      nlohmann::json::parse(plan("-m preset:r1-distill-qwen-1.5b --chip h200 --cards 1 --ctx 128 --json").out);
  EXPECT_EQ(j["efficiency"]["weights"], "bf16");
  EXPECT_DOUBLE_EQ(j["efficiency"]["decode"].get<double>(), 0.0789);  // the q8_0 entry: 8.5 bits, nearest to 16
  EXPECT_NE(j["efficiency"]["decode_source"].get<std::string>().find("measured on cuda q8_0, the nearest to bf16"),
            std::string::npos)
      << j["efficiency"];
  EXPECT_DOUBLE_EQ(j["assumptions"]["bandwidth_efficiency"].get<double>(), 0.0789);
  // No entry for the backend: the defaults, named as assumed.
  const nlohmann::json h100 =
      nlohmann::json::parse(plan("-m preset:r1-distill-qwen-1.5b --chip h100 --cards 1 --ctx 128 --json").out);
  EXPECT_EQ(h100["efficiency"]["decode_source"], "assumed");
  EXPECT_DOUBLE_EQ(h100["efficiency"]["decode"].get<double>(), 0.8);
}

// cai bench --save-profile records this machine's factors in a profile file (an existing file is updated), and
// cai plan --chip FILE -t N predicts the benchmarked speeds from them: the same within the noise of a second
// bandwidth probe and a second run (a generous bound; docs/perf/2026-12-06-plan-vs-bench.md has the table).
TEST(PlanCli, SavedProfilePredictsTheBenchmarkedSpeeds) {
  const std::string tmp = test::make_temp_dir("plan_profile"), model = tmp + "/q.gguf", saved = tmp + "/cpu.json";
  ASSERT_EQ(
      test::run_command(test::binary_path("cai-mkmodel") + " --arch qwen2 --preset qwen2-0.5b --dtype q4_0 -o " + model)
          .exit_code,
      0);
  const std::string bench = test::binary_path("cai") + " bench -m " + model + " -p 32 -n 16 -r 2 --json";
  for (int threads : {1, 2}) {
    const test::CommandResult b =
        test::run_command(bench + " -t " + std::to_string(threads) + " --save-profile " + saved);
    ASSERT_EQ(b.exit_code, 0) << b.err;
  }
  const nlohmann::json profile = nlohmann::json::parse(test::read_file(saved));
  ASSERT_EQ(profile["measured_efficiency"].size(), 2u) << profile.dump();
  for (int threads : {1, 2}) {
    SCOPED_TRACE(threads);
    const test::CommandResult b = test::run_command(bench + " -t " + std::to_string(threads));
    ASSERT_EQ(b.exit_code, 0) << b.err;
    const nlohmann::json measured = nlohmann::json::parse(test::last_line(b.out));
    const test::CommandResult p =
        plan("-m " + model + " --chip " + saved + " -t " + std::to_string(threads) + " --cards 1 --ctx 32 --json");
    ASSERT_EQ(p.exit_code, 0) << p.err;
    const nlohmann::json j = nlohmann::json::parse(p.out);
    EXPECT_NE(j["efficiency"]["decode_source"].get<std::string>().find("measured on cpu q4_0 at " +
                                                                       std::to_string(threads) + " threads"),
              std::string::npos)
        << j["efficiency"];
    const double decode = j["decode_tok_s"]["per_sequence"].get<double>() / measured["tg_tokens_per_s"].get<double>();
    const double prefill = j["prefill"]["tok_s"].get<double>() / measured["pp_tokens_per_s"].get<double>();
    EXPECT_GT(decode, 0.5);
    EXPECT_LT(decode, 2.0);
    EXPECT_GT(prefill, 0.5);
    EXPECT_LT(prefill, 2.0);
  }
}

TEST(PlanCli, ClearErrors) {
  struct Case {
    std::string args, message;
  };
  for (const Case& c : {Case{"-m preset:no-such-model --chip h200 --cards 8", "unknown preset 'no-such-model'"},
                        Case{"-m preset:deepseek-r1 --chip no-such-chip --cards 8", "no chip profile 'no-such-chip'"},
                        Case{"-m preset:deepseek-r1 --chip ascend --cards 8", "ambiguous chip profile 'ascend'"},
                        Case{"-m preset:deepseek-r1 --chip h200 --cards 0", "--cards must be between 1"},
                        Case{"-m preset:deepseek-r1 --chip cpu-x86-64 --cards 1", "--memory-gib"}}) {
    const test::CommandResult r = plan(c.args);
    EXPECT_NE(r.exit_code, 0) << c.args;
    EXPECT_NE(r.err.find(c.message), std::string::npos) << c.args << ": " << r.err;
    EXPECT_TRUE(r.out.empty()) << c.args;
  }
}

}  // namespace
}  // namespace cai
