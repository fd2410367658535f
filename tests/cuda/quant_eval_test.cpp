// End to end through the device decoders: `cai eval` of tests/data/quants/<T>.gguf (every 2-D weight in type T,
// embedding and output head included) on the simt device, against the logits CAI's CPU F32 path gives on the
// exact F32 twin (<T>.twin_logits.f32, see tests/data/quants/README.md). A few of the types added in plugin ABI 2.1,
// one per decoder family; their decoders are checked bit-exact type by type in gemm_test.cpp.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <string>
#include <tuple>

#include "test_paths.h"

namespace cai::test {
namespace {

class QuantModelOnSimt : public ::testing::TestWithParam<std::tuple<std::string, int>> {};

// max|logits − twin| ≤ 1e-4 · max|twin|, the bound the CPU meets (tests/cli/quant_twins_test.cpp). The KV cache is
// F32 (the device default, BF16, would dominate the difference).
TEST_P(QuantModelOnSimt, LogitsMatchTheF32Twin) {
  const auto& [type, warp] = GetParam();
  const std::string logits = make_temp_dir("quant_eval") + "/logits.f32";
  const CommandResult r = run_command("CAI_SIMT_WARP=" + std::to_string(warp) + " " + binary_path("cai") + " eval -m " +
                                      data_path("quants/" + type + ".gguf") +
                                      " --device simt:0 --kv-dtype f32 --tokens 1,2,3,4,5,6,7,8 --logits " + logits);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const std::vector<float> got = read_f32(logits), want = read_f32(data_path("quants/" + type + ".twin_logits.f32"));
  ASSERT_EQ(got.size(), want.size());
  ASSERT_FALSE(want.empty());
  float max_diff = 0.0f, max_ref = 0.0f;
  for (size_t i = 0; i < want.size(); ++i) {
    max_diff = std::max(max_diff, std::fabs(got[i] - want[i]));
    max_ref = std::max(max_ref, std::fabs(want[i]));
  }
  EXPECT_LE(max_diff, 1e-4f * max_ref);
}

INSTANTIATE_TEST_SUITE_P(AddedTypes, QuantModelOnSimt,
                         ::testing::Values(std::tuple{"Q5_1", 32}, std::tuple{"Q3_K", 64}, std::tuple{"IQ4_XS", 32},
                                           std::tuple{"IQ3_S", 64}, std::tuple{"IQ2_XS", 32}, std::tuple{"IQ1_M", 64}),
                         [](const auto& info) {
                           return std::get<0>(info.param) + "_warp" + std::to_string(std::get<1>(info.param));
                         });

}  // namespace
}  // namespace cai::test
