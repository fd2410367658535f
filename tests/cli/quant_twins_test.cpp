// Every GGUF weight type end to end: `cai eval` on tests/data/quants/<T>.gguf at its default precision (exact) gives
// the logits that CAI's F32 path gives on the exact F32 dequantization of that file (the twin;
// tests/data/quants/README.md). A wrong block layout, scale, sign or grid entry misses by orders of magnitude more
// than the 1e-4 allowed for summation order. The same for --precision fast on the types with integer kernels (their
// projections packed into row groups where they can be, or kept row-major with --no-repack), within the rounding of
// quantized activations.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <string>
#include <tuple>
#include <vector>

#include "test_paths.h"

namespace cai {
namespace {

const std::vector<std::string> kTypes = {"Q4_0",    "Q4_1",   "Q5_0",  "Q5_1",   "Q8_0",   "Q2_K",    "Q3_K",
                                         "Q4_K",    "Q5_K",   "Q6_K",  "IQ4_NL", "IQ4_XS", "IQ3_XXS", "IQ3_S",
                                         "IQ2_XXS", "IQ2_XS", "IQ2_S", "IQ1_S",  "IQ1_M",  "BF16"};

// The types with integer kernels under --precision fast (the others are computed exactly there too; IQ4_NL and IQ4_XS
// have them for packed rows only, so --no-repack computes those exactly).
const std::vector<std::string> kIntegerKernelTypes = {"Q4_0", "Q8_0", "Q2_K",   "Q3_K",  "Q4_K",
                                                      "Q5_K", "Q6_K", "IQ4_NL", "IQ4_XS"};

// The model's 264-entry vocabulary, 8 prompt tokens.
constexpr size_t kLogits = 8 * 264;

// (type, CAI_CPU_ISA): "" runs the best kernels of this CPU, "scalar" the portable ones built on core/quant.
class QuantTwins : public ::testing::TestWithParam<std::tuple<std::string, std::string>> {};

// max|logits − twin| of `cai eval` on the type's file ≤ tolerance · max|twin|.
// `flags` are cai eval's options beyond the model and the tokens.
void expect_near_twin(const std::string& type, const std::string& isa, const std::string& flags, float tolerance) {
  const std::string logits = test::make_temp_dir("quant-twin") + "/logits.f32";
  const std::string env = isa.empty() ? "" : "CAI_CPU_ISA=" + isa + " ";
  const test::CommandResult r =
      test::run_command(env + test::binary_path("cai") + " eval -m " + test::data_path("quants/" + type + ".gguf") +
                        flags + " --tokens 1,2,3,4,5,6,7,8 --logits " + logits + " --json");
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
  EXPECT_LE(max_diff, tolerance * max_ref)
      << type << flags << ": max|q - twin| = " << max_diff << ", max|twin| = " << max_ref;
}

std::string twin_param_name(const ::testing::TestParamInfo<std::tuple<std::string, std::string>>& info) {
  const std::string& isa = std::get<1>(info.param);
  return std::get<0>(info.param) + "_" + (isa.empty() ? "default" : isa);
}

TEST_P(QuantTwins, LogitsMatchTheF32Twin) {
  const auto& [type, isa] = GetParam();
  expect_near_twin(type, isa, "", 1e-4f);  // cai eval's default precision is exact
}

INSTANTIATE_TEST_SUITE_P(AllTypes, QuantTwins,
                         ::testing::Combine(::testing::ValuesIn(kTypes),
                                            ::testing::Values(std::string(), std::string("scalar"))),
                         twin_param_name);

class QuantTwinsFast : public QuantTwins {};

// Int8 activations round each 32-value block to 1/254 of its largest value: measured about 1e-2 of the largest logit
// for every int8 type, 3.7e-5 for Q8_0's 16-bit activations (row-major, --no-repack), 3.4e-3 for packed Q8_0, whose
// MLP gate and up take int8 ones; a wrong packed layout is off by the whole logit range.
TEST_P(QuantTwinsFast, FastPathStaysNearTheF32Twin) {
  const auto& [type, isa] = GetParam();
  const bool q8 = type == "Q8_0";
  expect_near_twin(type, isa, " --precision fast", q8 ? 1e-2f : 2e-2f);
  // The integer kernels on the file's rows.
  expect_near_twin(type, isa, " --precision fast --no-repack", q8 ? 1e-4f : 2e-2f);
}

INSTANTIATE_TEST_SUITE_P(IntegerKernelTypes, QuantTwinsFast,
                         ::testing::Combine(::testing::ValuesIn(kIntegerKernelTypes),
                                            ::testing::Values(std::string(), std::string("scalar"))),
                         twin_param_name);

}  // namespace
}  // namespace cai
