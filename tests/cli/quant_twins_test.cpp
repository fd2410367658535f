// Every GGUF weight type end to end: `cai eval` on tests/data/quants/<T>.gguf gives the logits that CAI's F32 path
// gives on the exact F32 dequantization of that file (the twin; tests/data/quants/README.md). A wrong block layout,
// scale, sign or grid entry misses by orders of magnitude more than the 1e-4 allowed for summation order.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <string>
#include <tuple>
#include <vector>

#include "test_paths.h"

namespace cai {
namespace {

const std::vector<std::string> kTypes = {"Q4_0",    "Q4_1",   "Q5_0",  "Q5_1",  "Q8_0",  "Q2_K",   "Q3_K",
                                        "Q4_K",    "Q5_K",   "Q6_K",  "IQ4_NL", "IQ4_XS", "IQ3_XXS", "IQ3_S",
                                        "IQ2_XXS", "IQ2_XS", "IQ2_S", "IQ1_S", "IQ1_M", "BF16"};

// The model's 264-entry vocabulary, 8 prompt tokens.
constexpr size_t kLogits = 8 * 264;

// (type, CAI_CPU_ISA): "" runs the best kernels of this CPU, "scalar" the portable ones built on core/quant.
class QuantTwins : public ::testing::TestWithParam<std::tuple<std::string, std::string>> {};

TEST_P(QuantTwins, LogitsMatchTheF32Twin) {
  const auto& [type, isa] = GetParam();
  const std::string logits = test::make_temp_dir("quant-twin") + "/logits.f32";
  const std::string env = isa.empty() ? "" : "CAI_CPU_ISA=" + isa + " ";
  const test::CommandResult r = test::run_command(env + test::binary_path("cai") + " eval -m " +
                                                  test::data_path("quants/" + type + ".gguf") +
                                                  " --tokens 1,2,3,4,5,6,7,8 --logits " + logits + " --json");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const std::vector<float> q = test::read_f32(logits);
  const std::vector<float> t = test::read_f32(test::data_path("quants/" + type + ".twin_logits.f32"));
  ASSERT_EQ(q.size(), kLogits);
  ASSERT_EQ(t.size(), kLogits);
  float max_diff = 0, max_ref = 0;
  for (size_t i = 0; i < kLogits; ++i) {
    ASSERT_TRUE(std::isfinite(q[i])) << "logit " << i;
    max_diff = std::max(max_diff, std::fabs(q[i] - t[i]));
    max_ref = std::max(max_ref, std::fabs(t[i]));
  }
  EXPECT_GT(max_ref, 0.5f);  // the twins' logits reach about 1.25: guards against an empty or zeroed reference
  EXPECT_LE(max_diff, 1e-4f * max_ref) << "max|q - twin| = " << max_diff << ", max|twin| = " << max_ref;
}

INSTANTIATE_TEST_SUITE_P(AllTypes, QuantTwins,
                         ::testing::Combine(::testing::ValuesIn(kTypes),
                                            ::testing::Values(std::string(), std::string("scalar"))),
                         [](const auto& info) {
                           const std::string& isa = std::get<1>(info.param);
                           return std::get<0>(info.param) + "_" + (isa.empty() ? "default" : isa);
                         });

}  // namespace
}  // namespace cai
