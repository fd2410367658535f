// One model over several devices (docs/multi-device.md): the reference-logit oracles through pipeline stages and
// tensor-parallel ranks on simt devices (CAI_SIMT_DEVICES), on the CPU beside a simt device, and with the routed
// experts on the CPU (--moe-device cpu); each device holding only its share of the weights; and the layout errors.
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <ostream>

#include "oracle_eval.h"
#include "test_paths.h"

namespace cai {
namespace {

using test::cai_bin;
using test::param_name;

struct LayoutCase {
  std::string oracle;  // a folder (or GGUF file) of tests/data/oracle
  std::string env;     // CAI_SIMT_DEVICES=N
  std::string args;    // --device list and layout flags
};

void PrintTo(const LayoutCase& c, std::ostream* os) { *os << c.oracle << " " << c.env << " " << c.args; }

std::string case_name(const ::testing::TestParamInfo<std::tuple<LayoutCase, int>>& info) {
  const auto& [c, warp] = info.param;
  return param_name(c.oracle + "_" + c.args) + "_warp" + std::to_string(warp);
}

// The same references as one device (OracleEvalDevice: 1e-3, F32 KV cache, the same greedy tokens): a layout moves
// activations between devices, it changes no arithmetic.
class OracleEvalLayout : public ::testing::TestWithParam<std::tuple<LayoutCase, int>> {};

TEST_P(OracleEvalLayout, MatchesReferenceLogitsAndGreedyTokens) {
  const auto& [c, warp] = GetParam();
  test::expect_oracle(c.oracle, c.env + " CAI_SIMT_WARP=" + std::to_string(warp), c.args + " --kv-dtype f32", 1e-3f);
}

std::vector<LayoutCase> layout_cases() {
  std::vector<LayoutCase> cases;
  std::vector<std::string> all = test::kOracles;
  all.push_back(test::kMainlineGguf);
  for (const std::string& o : all) {
    cases.push_back({o, "CAI_SIMT_DEVICES=2", "--device simt:0,simt:1 --pp 2"});
    cases.push_back({o, "", "--device cpu,simt:0 --pp 2"});
    cases.push_back({o, "CAI_SIMT_DEVICES=2", "--device simt:0,simt:1 --tp 2"});
    cases.push_back({o, "", "--device cpu,simt:0 --tp 2"});
    cases.push_back({o, "CAI_SIMT_DEVICES=4", "--device simt:0-3 --tp 2 --pp 2"});
    // Three stages of uneven size (qwen2_tiny has 3 layers, the others 4).
    cases.push_back(
        {o, "CAI_SIMT_DEVICES=3", o == "qwen2_tiny" ? "--device simt:0-2" : "--device simt:0-2 --layer-split 2,1,1"});
    if (o.starts_with("deepseek")) {
      // On the device under test where one is named (scripts/device-check.sh: cuda:0), else simt:0.
      const char* device = std::getenv("CAI_TEST_DEVICE");
      cases.push_back({o, "", std::string("--device ") + (device ? device : "simt:0") + " --moe-device cpu"});
      cases.push_back({o, "CAI_SIMT_DEVICES=2", "--device simt:0,simt:1 --ep 2"});
      cases.push_back({o, "CAI_SIMT_DEVICES=4", "--device simt:0-3 --ep 2 --pp 2"});
    }
  }
  return cases;
}

INSTANTIATE_TEST_SUITE_P(Oracles, OracleEvalLayout,
                         ::testing::Combine(::testing::ValuesIn(layout_cases()), ::testing::Values(32, 64)), case_name);

nlohmann::json eval_json(const std::string& env, const std::string& model, const std::string& args) {
  test::CommandResult r = test::run_command(env + " " + cai_bin() + " eval -m " + test::data_path("oracle/" + model) +
                                            " --tokens 1,2,3 --greedy 2 --kv-dtype f32 --json " + args);
  EXPECT_EQ(r.exit_code, 0) << r.err;
  return r.exit_code == 0 ? nlohmann::json::parse(test::last_line(r.out)) : nlohmann::json::object();
}

// Bytes of a safetensors file's weight tensors (names ending in .weight: no FP8 scales) whose name contains `part`,
// read from the file's own header.
size_t safetensors_bytes(const std::string& path, const std::string& part) {
  std::ifstream in(path, std::ios::binary);
  uint64_t header_len = 0;
  in.read(reinterpret_cast<char*>(&header_len), sizeof header_len);
  std::string header(header_len, '\0');
  in.read(header.data(), static_cast<std::streamsize>(header_len));
  const nlohmann::json tensors = nlohmann::json::parse(header);
  size_t n = 0;
  for (const auto& [name, t] : tensors.items())
    if (name != "__metadata__" && name.find(part) != std::string::npos && name.ends_with(".weight"))
      n += t["data_offsets"][1].get<size_t>() - t["data_offsets"][0].get<size_t>();
  return n;
}

// Memory a simt device has in use beyond its weights: the KV cache of a few tokens and the step's workspace (measured
// 36-45 KiB), and the backend's scratch region where the MoE groups tokens by expert (1 MiB granule). A device that
// also held another stage's weights would exceed it by that share (0.5-1.1 MiB here).
constexpr size_t kScratchSlack = (size_t{1} << 20) + (size_t{128} << 10);

// Each pipeline stage's device holds only its layers' weights: the shares add up to the one-device total, neither
// holds it all, and the memory in use on each is its share plus scratch. Each tensor-parallel rank holds its slices
// plus the replicated norms, MLA down-projections and router, and rank 0 the embedding table: more than half, well
// short of the whole.
TEST(Layout, EachStageDeviceHoldsOnlyItsShare) {
  for (const char* model : {"deepseek_v3_tiny", "qwen2_tiny"}) {
    SCOPED_TRACE(model);
    const nlohmann::json one = eval_json("", model, "--device simt:0");
    const size_t total = one["devices"][0]["weight_bytes"].get<size_t>();
    const nlohmann::json two = eval_json("CAI_SIMT_DEVICES=2", model, "--device simt:0,simt:1");
    ASSERT_EQ(two["devices"].size(), 2u);
    size_t sum = 0;
    for (const auto& d : two["devices"]) {
      const size_t w = d["weight_bytes"].get<size_t>(), used = d["memory_used_bytes"].get<size_t>();
      EXPECT_LT(w, total * 3 / 4) << d;
      EXPECT_GE(used, w) << d;
      EXPECT_LE(used, w + kScratchSlack) << d;
      sum += w;
    }
    EXPECT_EQ(sum, total);
    EXPECT_EQ(two["greedy"], one["greedy"]);
    const nlohmann::json tp = eval_json("CAI_SIMT_DEVICES=2", model, "--device simt:0,simt:1 --tp 2");
    ASSERT_EQ(tp["devices"].size(), 2u);
    for (const auto& d : tp["devices"]) {
      const size_t w = d["weight_bytes"].get<size_t>(), used = d["memory_used_bytes"].get<size_t>();
      EXPECT_LT(w, total * 3 / 5) << d;
      EXPECT_GT(w, total * 2 / 5) << d;
      EXPECT_GE(used, w) << d;
      EXPECT_LE(used, w + kScratchSlack) << d;
    }
    EXPECT_EQ(tp["greedy"], one["greedy"]);
    // GQA ranks cache their KV heads (the same total); MLA ranks each cache the whole latent.
    const int copies = std::string(model).starts_with("deepseek") ? 2 : 1;
    EXPECT_EQ(tp["kv_bytes_per_token"].get<int64_t>(), copies * one["kv_bytes_per_token"].get<int64_t>());
  }
}

// --moe-device cpu: every routed expert's weight bytes (the checkpoint's mlp.experts.*.weight tensors) stay in host
// memory, and the device holds exactly the rest.
TEST(Layout, MoeDeviceCpuLeavesNoRoutedExpertOnTheDevice) {
  for (const char* model : {"deepseek_v3_tiny", "deepseek_v3_tiny/fp8"}) {
    SCOPED_TRACE(model);
    const std::string dir = test::data_path(std::string("oracle/") + model);
    const size_t experts = safetensors_bytes(dir + "/model.safetensors", ".mlp.experts.");
    ASSERT_GT(experts, 0u);
    const nlohmann::json one = eval_json("", model, "--device simt:0");
    const size_t total = one["devices"][0]["weight_bytes"].get<size_t>();
    const nlohmann::json split = eval_json("", model, "--device simt:0 --moe-device cpu");
    ASSERT_EQ(split["devices"].size(), 2u) << split;
    const nlohmann::json& simt = split["devices"][0];
    const nlohmann::json& cpu = split["devices"][1];
    EXPECT_EQ(simt["name"], "simt:0");
    EXPECT_EQ(cpu["name"], "cpu:0");
    EXPECT_EQ(cpu["weight_bytes"].get<size_t>(), experts);
    EXPECT_EQ(simt["weight_bytes"].get<size_t>(), total - experts);
    EXPECT_LE(simt["memory_used_bytes"].get<size_t>(), total - experts + kScratchSlack);
    EXPECT_EQ(split["greedy"], one["greedy"]);
  }
}

// `cai plan --json` on two H200s lays the tiny models out as TP 2 (x EP 2 for DeepSeek); --plan runs that layout over
// two simt devices and matches the references. A plan of several replicas is refused, naming the processes it needs.
TEST(Layout, PlanFileRunsThePlannersLayout) {
  const std::string dir = test::make_temp_dir("plan");
  for (const char* model : {"deepseek_v3_tiny", "qwen2_tiny"}) {
    SCOPED_TRACE(model);
    const std::string plan = dir + "/" + model + ".json";
    test::CommandResult r =
        test::run_command(cai_bin() + " plan -m " + test::data_path(std::string("oracle/") + model) +
                          " --chip h200 --cards 2 --json > " + plan);
    ASSERT_EQ(r.exit_code, 0) << r.err;
    const nlohmann::json layout = nlohmann::json::parse(test::read_file(plan))["layout"];
    ASSERT_EQ(layout["tensor_parallel"], 2);
    test::expect_oracle(model, "CAI_SIMT_DEVICES=2", "--device simt:0,simt:1 --plan " + plan + " --kv-dtype f32",
                        1e-3f);
  }
  const std::string replicas = dir + "/replicas.json";
  std::ofstream(replicas) << R"({"layout": {"tensor_parallel": 1, "pipeline_parallel": 1, "expert_parallel": 1,
                                           "data_parallel": 2, "stages": [{"layers": [0, 3]}]}})";
  test::CommandResult r = test::run_command(cai_bin() + " eval -m " + test::data_path("oracle/deepseek_v3_tiny") +
                                            " --tokens 1 --plan " + replicas);
  EXPECT_NE(r.exit_code, 0);
  EXPECT_NE(r.err.find("2 replicas (data_parallel)"), std::string::npos) << r.err;
}

// A device list without layout flags: on devices with a profile, the layout `cai plan` picks (TP 2 x EP 2 for the
// tiny DeepSeek on two H200-profiled devices), else pipeline stages; both give the one-device greedy tokens.
TEST(Layout, ADeviceListAloneGetsThePlannersLayout) {
  const std::string model = test::data_path("oracle/deepseek_v3_tiny");
  auto eval = [&](const std::string& args) {
    return test::run_command("CAI_SIMT_DEVICES=2 " + cai_bin() + " eval -m " + model +
                             " --tokens 1,2,3 --greedy 2 --kv-dtype f32 --json --device simt:0,simt:1 " + args);
  };
  const test::CommandResult planned = eval("--profile nvidia-h200-sxm"), staged = eval("");
  ASSERT_EQ(planned.exit_code, 0) << planned.err;
  ASSERT_EQ(staged.exit_code, 0) << staged.err;
  EXPECT_NE(planned.err.find("layout from `cai plan -m " + model + " --chip nvidia-h200-sxm --cards 2"),
            std::string::npos)
      << planned.err;
  EXPECT_NE(planned.err.find("TP 2 x EP 2"), std::string::npos) << planned.err;
  EXPECT_NE(staged.err.find("no device profile to plan with"), std::string::npos) << staged.err;
  EXPECT_NE(staged.err.find("layers 0..1 on simt:0; layers 2..3 on simt:1"), std::string::npos) << staged.err;
  EXPECT_EQ(nlohmann::json::parse(test::last_line(planned.out))["greedy"],
            nlohmann::json::parse(test::last_line(staged.out))["greedy"]);
}

test::CommandResult eval_fails(const std::string& env, const std::string& args) {
  test::CommandResult r = test::run_command(env + " " + cai_bin() + " eval -m " +
                                            test::data_path("oracle/deepseek_v3_tiny") + " --tokens 1 " + args);
  EXPECT_NE(r.exit_code, 0) << args;
  return r;
}

// Layouts that cannot run say why, with the numbers; an unknown device lists the devices there are.
TEST(Layout, RefusedLayoutsNameTheNumbers) {
  EXPECT_NE(eval_fails("CAI_SIMT_DEVICES=2", "--device simt:0,simt:1 --pp 3").err.find("--pp 3 needs 3 devices"),
            std::string::npos);
  EXPECT_NE(eval_fails("CAI_SIMT_DEVICES=3", "--device simt:0-2 --tp 2")
                .err.find("--tp 2 x --pp 1 needs 2 devices, "
                          "but --device simt:0-2 lists 3"),
            std::string::npos);
  EXPECT_NE(eval_fails("CAI_SIMT_DEVICES=3", "--device simt:0-2 --tp 3")
                .err.find("4 attention heads do not split "
                          "over 3 ranks"),
            std::string::npos);
  EXPECT_NE(eval_fails("CAI_SIMT_DEVICES=2", "--device simt:0,simt:1 --tp 2 --moe-device cpu").err.find("--moe-device"),
            std::string::npos);
  EXPECT_NE(eval_fails("CAI_SIMT_DEVICES=4", "--device simt:0-3 --tp 2 --ep 4").err.find("--ep 4 with --tp 2"),
            std::string::npos);
  EXPECT_NE(eval_fails("CAI_SIMT_DEVICES=3", "--device simt:0-2 --ep 3")
                .err.find("16 routed experts do not split over "
                          "3 ranks"),
            std::string::npos);
  EXPECT_NE(eval_fails("CAI_SIMT_DEVICES=2", "--device simt:0,simt:1 --layer-split 3,2")
                .err.find("covers 5 layers, but the model has 4"),
            std::string::npos);
  EXPECT_NE(eval_fails("CAI_SIMT_DEVICES=2", "--device simt:0,simt:1 --layer-split 4").err.find("names 1 stages"),
            std::string::npos);
  EXPECT_NE(eval_fails("CAI_SIMT_DEVICES=2", "--device simt:0,simt:2").err.find("simt:0, simt:1"), std::string::npos);
  EXPECT_NE(eval_fails("CAI_SIMT_DEVICES=2", "--device simt:0,simt:0").err.find("named twice"), std::string::npos);
  EXPECT_NE(eval_fails("CAI_SIMT_DEVICES=5", "--device simt:0-4").err.find("5 pipeline stages for a model of 4 layers"),
            std::string::npos);
  // A stage whose share does not fit its device: the error names that device and the bytes.
  const std::string err = eval_fails("CAI_SIMT_DEVICES=2 CAI_SIMT_MEMORY=64KiB", "--device simt:0,simt:1").err;
  EXPECT_NE(err.find("does not fit in simt:0"), std::string::npos) << err;
  EXPECT_NE(err.find("bytes of weights"), std::string::npos) << err;
  EXPECT_NE(err.find("for its 2 of 4 layers"), std::string::npos) << err;
}

}  // namespace
}  // namespace cai
