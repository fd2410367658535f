// `cai bench --json` on a test model: the JSON report carries the single-sequence rates, the roofline, and with
// --batch the aggregate rate of the batch and its ratio to one sequence.
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "test_paths.h"

namespace cai {
namespace {

TEST(BenchCli, JsonReportWithBatch) {
  test::CommandResult r = test::run_command(test::binary_path("cai") + " bench -m " +
                                            test::data_path("models/stories260K.gguf") + " -p 8 -n 4 -r 1 -b 3 --json");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const nlohmann::json j = nlohmann::json::parse(r.out);
  EXPECT_GT(j.at("pp_tokens_per_s").get<double>(), 0);
  EXPECT_GT(j.at("tg_tokens_per_s").get<double>(), 0);
  EXPECT_GT(j.at("tg_roofline_ratio").get<double>(), 0);
  EXPECT_EQ(j.at("batch").get<int>(), 3);
  const double batch = j.at("tg_batch_tokens_per_s").get<double>(), single = j.at("tg_tokens_per_s").get<double>();
  EXPECT_GT(batch, 0);
  EXPECT_NEAR(j.at("batch_speedup").get<double>(), batch / single, 1e-9);
}

TEST(BenchCli, RejectsABatchOutOfRange) {
  test::CommandResult r = test::run_command(test::binary_path("cai") + " bench -m " +
                                            test::data_path("models/stories260K.gguf") + " -b 0");
  EXPECT_NE(r.exit_code, 0);
}

}  // namespace
}  // namespace cai
