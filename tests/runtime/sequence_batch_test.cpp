// SequenceBatch: sequences stepped together (batch-invariant device) give exactly the logits each gives alone, and
// mismatched inputs are refused.
#include "runtime/sequence_batch.h"

#include <gtest/gtest.h>

#include "hal/hal.h"
#include "model/model_loader.h"
#include "runtime/single_sequence.h"
#include "runtime/device_under_test.h"
#include "test_paths.h"

namespace cai {
namespace {

class SequenceBatchOn : public ::testing::TestWithParam<std::string> {};

TEST_P(SequenceBatchOn, BatchedStepsEqualSoloRuns) {
  hal::Device* cpu = test::device_named(GetParam());
  ASSERT_NE(cpu, nullptr);
  Result<LoadedModel> lm = load_model(test::data_path("models/TinyStories-656K-Q8_0.gguf"), *cpu);
  ASSERT_TRUE(lm.ok()) << lm.status().to_string();
  Model& model = *lm->model;
  cpu->set_batch_invariant(true);
  const size_t vocab = static_cast<size_t>(model.config().vocab_size);
  constexpr int kSeqs = 12, kPrompt = 5, kSteps = 3;  // 12 rows: more than one fused pass, so the tiled GEMM runs
  auto token = [](int s, int i) { return static_cast<int32_t>(1 + (s * 37 + i * 11) % 500); };

  Result<SequenceBatch> batch = SequenceBatch::create(model, kSeqs, kPrompt + kSteps);
  ASSERT_TRUE(batch.ok()) << batch.status().to_string();
  std::vector<std::vector<float>> batched;  // per step: [kSeqs, vocab]
  std::vector<int32_t> prompts;
  for (int s = 0; s < kSeqs; ++s)
    for (int i = 0; i < kPrompt; ++i) prompts.push_back(token(s, i));
  Result<std::vector<float>> first = batch->step(prompts, kPrompt, false);
  ASSERT_TRUE(first.ok()) << first.status().to_string();
  batched.push_back(*first);
  for (int step = 0; step < kSteps - 1; ++step) {
    std::vector<int32_t> next;
    for (int s = 0; s < kSeqs; ++s) next.push_back(token(s, kPrompt + step));
    Result<std::vector<float>> l = batch->step(next, 1, false);
    ASSERT_TRUE(l.ok()) << l.status().to_string();
    batched.push_back(*l);
  }

  for (int s = 0; s < kSeqs; ++s) {
    Result<SingleSequence> solo = SingleSequence::create(model, kPrompt + kSteps);
    ASSERT_TRUE(solo.ok());
    std::vector<int32_t> p;
    for (int i = 0; i < kPrompt; ++i) p.push_back(token(s, i));
    for (int step = 0; step < kSteps; ++step) {
      Result<std::vector<float>> l = step == 0 ? solo->step(p, false) : [&] {
        const int32_t t = token(s, kPrompt + step - 1);
        return solo->step(std::span<const int32_t>(&t, 1), false);
      }();
      ASSERT_TRUE(l.ok());
      const float* b = batched[static_cast<size_t>(step)].data() + static_cast<size_t>(s) * vocab;
      EXPECT_EQ(0, std::memcmp(l->data(), b, vocab * sizeof(float))) << "sequence " << s << " step " << step;
    }
  }
  cpu->set_batch_invariant(false);
}

// The sync contract (hal.h): a forward pass blocks the host once, to read its logits; everything else is queued.
TEST_P(SequenceBatchOn, ForwardPassSyncsWithTheHostOnce) {
  hal::Device* dev = test::device_named(GetParam());
  ASSERT_NE(dev, nullptr);
  Result<LoadedModel> lm = load_model(test::data_path("models/TinyStories-656K-Q8_0.gguf"), *dev);
  ASSERT_TRUE(lm.ok()) << lm.status().to_string();
  Result<SingleSequence> seq = SingleSequence::create(*lm->model, 16);
  ASSERT_TRUE(seq.ok());
  const std::vector<int32_t> prompt = {1, 400, 22, 7};
  for (int step = 0; step < 3; ++step) {
    const uint64_t before = dev->default_stream().n_host_syncs();
    ASSERT_TRUE(
        seq->step(step == 0 ? std::span<const int32_t>(prompt) : std::span<const int32_t>(&prompt[1], 1), false).ok());
    if (!dev->host_visible()) {
      EXPECT_EQ(dev->default_stream().n_host_syncs() - before, 1u) << "step " << step;
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Devices, SequenceBatchOn, ::testing::Values("cpu", "simt:0"),
                         [](const auto& info) { return test::device_param_name(info.param); });

TEST(SequenceBatch, RefusesMismatchedInput) {
  hal::Device* cpu = hal::Registry::global().find_device("cpu").value();
  Result<LoadedModel> lm = load_model(test::data_path("models/stories260K.gguf"), *cpu);
  ASSERT_TRUE(lm.ok());
  EXPECT_FALSE(SequenceBatch::create(*lm->model, 0, 8).ok());
  EXPECT_FALSE(SequenceBatch::create(*lm->model, 2, 0).ok());
  Result<SequenceBatch> b = SequenceBatch::create(*lm->model, 2, 4);
  ASSERT_TRUE(b.ok());
  std::vector<int32_t> three = {1, 2, 3};
  EXPECT_FALSE(b->step(three, 1, false).ok());  // 2 sequences need 2 tokens per step
  std::vector<int32_t> ten(10, 1);
  EXPECT_FALSE(b->step(ten, 5, false).ok());  // longer than the context
  std::vector<int32_t> two = {1, 2};
  EXPECT_TRUE(b->step(two, 1, false).ok());
}

}  // namespace
}  // namespace cai
