// `cai bench --json` on a test model: the JSON report carries the start-up cost (load time, RSS once loaded), the
// single-sequence rates, the roofline, the precision (fast unless asked), and with --batch the aggregate rate of the
// batch and its ratio to one sequence; generation starts from an empty context unless --depth asks for one.
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
  EXPECT_EQ(j.at("depth").get<int>(), 0);                   // generation from an empty context, as llama-bench's tgN
  EXPECT_EQ(j.at("precision").get<std::string>(), "fast");  // run, serve and bench default to the fast path
  EXPECT_EQ(j.at("batch").get<int>(), 3);
  const double batch = j.at("tg_batch_tokens_per_s").get<double>(), single = j.at("tg_tokens_per_s").get<double>();
  EXPECT_GT(batch, 0);
  EXPECT_NEAR(j.at("batch_speedup").get<double>(), batch / single, 1e-9);
  // The process holds at least the ~1 MB of weights (and its own code) once loaded; a tiny model loads in well under
  // a minute and needs far less than 4 GiB.
  EXPECT_GT(j.at("load_seconds").get<double>(), 0);
  EXPECT_LT(j.at("load_seconds").get<double>(), 60);
  EXPECT_GT(j.at("rss_after_load_bytes").get<int64_t>(), j.at("weight_bytes").get<int64_t>());
  EXPECT_LT(j.at("rss_after_load_bytes").get<int64_t>(), int64_t{4} << 30);
}

// The text report; with --depth, generation (one sequence and the batch) starts after that many prefilled context
// tokens, and the report says so.
TEST(BenchCli, TextReportStartsWithLoadTimeAndRssAndNamesTheDepth) {
  test::CommandResult r = test::run_command(test::binary_path("cai") + " bench -m " +
                                            test::data_path("models/stories260K.gguf") + " -p 4 -n 2 -d 40 -r 1 -b 2");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out.rfind("load: ", 0), 0u) << r.out;
  EXPECT_NE(r.out.find(" s, RSS after load "), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("tg2 @ d40: "), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("tg2 @ d40 x 2 sequences: "), std::string::npos) << r.out;
  EXPECT_NE(
      test::run_command(test::binary_path("cai") + " bench -m " + test::data_path("models/stories260K.gguf") + " -d -1")
          .exit_code,
      0);
}

// On a device with its own memory the phase shares come from a pass of their own (fenced at phase boundaries): every
// phase of a dense decoder step is there and the shares add up to one.
TEST(BenchCli, DevicePhaseSharesCoverTheStep) {
  test::CommandResult r =
      test::run_command(test::binary_path("cai") + " bench -m " + test::data_path("models/stories260K.gguf") +
                        " --device simt:0 -p 4 -n 3 -r 1 --json");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const nlohmann::json shares = nlohmann::json::parse(r.out).at("tg_time_share");
  double total = 0;
  for (const char* phase : {"attn_proj", "attention", "mlp", "norm_residual", "lm_head"}) {
    ASSERT_TRUE(shares.contains(phase)) << shares.dump();
    EXPECT_GT(shares.at(phase).get<double>(), 0) << phase;
  }
  for (const auto& [phase, share] : shares.items()) total += share.get<double>();
  EXPECT_NEAR(total, 1.0, 1e-9);
}

TEST(BenchCli, RejectsABatchOutOfRange) {
  test::CommandResult r =
      test::run_command(test::binary_path("cai") + " bench -m " + test::data_path("models/stories260K.gguf") + " -b 0");
  EXPECT_NE(r.exit_code, 0);
}

}  // namespace
}  // namespace cai

namespace cai {
namespace {

// Bytes each collective moved per generated token, over two simt devices, by hand from the tiny DeepSeek oracle's
// config (hidden 128, 4 layers, F32 activations, an untied head): two pipeline stages send one hidden row per token
// across the boundary; two tensor-parallel ranks all-reduce two rows per layer (a ring moves 2 (k - 1) x the bytes)
// and send rank 0's embedded row to rank 1. The transfer time is one of the phases.
TEST(BenchCli, ReportsTheBytesEachCollectiveMovesPerToken) {
  const int64_t row = 128 * 4;
  // Two stages: the hidden row once per token across the boundary. Tensor parallel: the embedding's row broadcast
  // to the second rank, then two ring all-reduces per layer.
  for (const auto& [layout, send_recv, broadcast, all_reduce] :
       {std::tuple{"--device simt:0,simt:1", row, int64_t{0}, int64_t{0}},
        std::tuple{"--device simt:0,simt:1 --tp 2", int64_t{0}, row, 4 * 2 * 2 * row}}) {
    SCOPED_TRACE(layout);
    test::CommandResult r =
        test::run_command("CAI_SIMT_DEVICES=2 " + test::binary_path("cai") + " bench -m " +
                          test::data_path("oracle/deepseek_v3_tiny") + " " + layout + " -p 4 -n 4 -r 1 --json");
    ASSERT_EQ(r.exit_code, 0) << r.err;
    const nlohmann::json j = nlohmann::json::parse(r.out);
    const nlohmann::json& by = j.at("tg_collective_bytes_per_token");
    EXPECT_EQ(by.at("send_recv").get<double>(), send_recv);
    EXPECT_EQ(by.at("broadcast").get<double>(), broadcast);
    EXPECT_EQ(by.at("all_reduce").get<double>(), all_reduce);
    EXPECT_EQ(j.at("tg_transfer_bytes_per_token").get<double>(), send_recv + broadcast + all_reduce);
    EXPECT_TRUE(j.at("tg_time_share").contains("transfer")) << j.at("tg_time_share");
  }
}

}  // namespace
}  // namespace cai
