// The MTP module and its drafter against the float64 reference (tests/data/oracle/deepseek_v3_tiny_mtp): the
// module's logits at every greedy step and its drafts, in the reference's protocol (prompt, then one main token and
// one MTP row per step), on the CPU and the simt device.
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <cmath>

#include "model/model_loader.h"
#include "runtime/device_under_test.h"
#include "runtime/sampler.h"
#include "runtime/single_sequence.h"
#include "runtime/spec/mtp_drafter.h"
#include "test_paths.h"

namespace cai {
namespace {

constexpr int kBlock = 16;
const std::string kOracle = "oracle/deepseek_v3_tiny_mtp";

float max_diff(std::span<const float> a, std::span<const float> b) {
  EXPECT_EQ(a.size(), b.size());
  float d = 0;
  for (size_t i = 0; i < std::min(a.size(), b.size()); ++i) d = std::max(d, std::fabs(a[i] - b[i]));
  return d;
}

class MtpOracle : public ::testing::TestWithParam<std::string> {};

TEST_P(MtpOracle, DraftsAndStepLogitsMatchTheReference) {
  hal::Device* dev = test::device_named(GetParam());
  ASSERT_NE(dev, nullptr);
  LoadOptions lo;
  lo.mtp = true;
  lo.kv_dtype = DType::kF32;
  Result<LoadedModel> lm = load_model(test::data_path(kOracle), *dev, lo);
  ASSERT_TRUE(lm.ok()) << lm.status().to_string();
  Model& model = *lm->model;
  ASSERT_NE(model.mtp(), nullptr);
  const nlohmann::json spec = nlohmann::json::parse(test::read_file(test::data_path(kOracle + "/tokens.json")));
  const size_t vocab = 512, hidden = 128;
  for (const auto& p : spec["prompts"]) {
    std::vector<int32_t> tokens = p["input_ids"].get<std::vector<int32_t>>();
    const int n = static_cast<int>(tokens.size());
    const std::string gen_mtp = p["gen_mtp_logits_file"].get<std::string>();
    const std::vector<float> ref = test::read_f32(test::data_path(kOracle + "/" + gen_mtp));
    Result<SingleSequence> seq = SingleSequence::create(model, n + 16, kBlock);
    ASSERT_TRUE(seq.ok());
    auto drafter = MtpDrafter::create(model, (n + 16 + kBlock - 1) / kBlock, kBlock);
    ASSERT_TRUE(drafter.ok()) << drafter.status().to_string();
    const std::vector<int32_t> table = identity_block_table((n + 16 + kBlock - 1) / kBlock);
    std::vector<float> h;
    Result<std::vector<float>> logits = seq->step(tokens, false, &h);
    ASSERT_TRUE(logits.ok());
    std::vector<int32_t> greedy, drafts;
    int step_start = 0;
    for (int j = 0; j < 8; ++j) {
      greedy.push_back(argmax(*logits));
      tokens.push_back(greedy.back());
      const DraftSeq s{0, tokens, static_cast<int>(tokens.size()) - 1, step_start, 0, table, 1};
      Result<std::vector<std::vector<int32_t>>> d = (*drafter)->draft(std::span(&s, 1), h.data());
      ASSERT_TRUE(d.ok()) << d.status().to_string();
      ASSERT_EQ((*d)[0].size(), 1u);
      drafts.push_back((*d)[0][0]);
      step_start = static_cast<int>(tokens.size()) - 1;
      logits = seq->step(std::span(&tokens.back(), 1), false, &h);
      ASSERT_TRUE(logits.ok());
    }
    EXPECT_EQ(greedy, p["greedy_next_tokens"].get<std::vector<int32_t>>()) << p["name"];
    EXPECT_EQ(drafts, p["mtp_draft_tokens"].get<std::vector<int32_t>>()) << p["name"];

    // The module's logits of the greedy steps (rows n-1 .. n+6 of the MTP sequence), recomputed over the whole
    // sequence in one pass from the main model's hidden states.
    std::vector<float> all_hidden;
    Result<SingleSequence> again = SingleSequence::create(model, n + 16, kBlock);
    ASSERT_TRUE(again.ok());
    const std::vector<int32_t> fed(tokens.begin(), tokens.end() - 1);  // the 8th greedy token's row is not needed
    ASSERT_TRUE(again->step(fed, false, &all_hidden).ok());
    MtpModule& mtp = *model.mtp();
    Result<KvCache> kv =
        KvCache::create(mtp.mtp_kv_shards(), mtp.mtp_kv_spec(), static_cast<int>(table.size()), kBlock);
    ASSERT_TRUE(kv.ok());
    StepBatch b;
    const int rows = static_cast<int>(fed.size());
    for (int i = 0; i < rows; ++i) {
      b.tokens.push_back(tokens[static_cast<size_t>(i) + 1]);
      b.positions.push_back(i);
      b.slots.push_back(i);
      if (i >= n - 1) b.logit_rows.push_back(i);
    }
    b.seqs.push_back({0, rows, 0, table.data()});
    std::vector<float> mine(b.logit_rows.size() * vocab), out(b.logit_rows.size() * hidden);
    ASSERT_TRUE(mtp.forward_mtp(b, all_hidden.data(), *kv, mine.data(), out.data()).ok());
    EXPECT_LE(max_diff(mine, std::span(ref).first(mine.size())), 1e-4f) << p["name"];
    // The block outputs (the chained draft's hidden state) against the reference's y rows.
    const std::string hidden_file = p["mtp_hidden_file"].get<std::string>();
    const std::vector<float> y = test::read_f32(test::data_path(kOracle + "/" + hidden_file));
    const size_t n_rows_ref = y.size() / 3 / hidden;
    const std::span<const float> y_ref(y.data() + 2 * n_rows_ref * hidden + static_cast<size_t>(n - 1) * hidden,
                                       out.size());
    EXPECT_LE(max_diff(out, y_ref), 1e-4f) << p["name"];
  }
}

INSTANTIATE_TEST_SUITE_P(Devices, MtpOracle, ::testing::Values("cpu", "simt:0"),
                         [](const auto& info) { return test::device_param_name(info.param); });

TEST(MtpDrafter, NeedsAModelLoadedWithItsModule) {
  hal::Device* cpu = test::device_named("cpu");
  Result<LoadedModel> lm = load_model(test::data_path(kOracle), *cpu);
  ASSERT_TRUE(lm.ok());
  EXPECT_EQ(lm->model->mtp(), nullptr);
  EXPECT_EQ(MtpDrafter::create(*lm->model, 4, kBlock).status().code(), StatusCode::kUnsupported);
  LoadOptions lo;
  lo.mtp = true;
  Result<LoadedModel> none = load_model(test::data_path("oracle/deepseek_v3_tiny"), *cpu, lo);
  ASSERT_FALSE(none.ok());
  EXPECT_NE(none.status().message().find("no multi-token-prediction module"), std::string::npos)
      << none.status().message();
}

}  // namespace
}  // namespace cai
