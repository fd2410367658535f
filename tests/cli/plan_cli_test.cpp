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
