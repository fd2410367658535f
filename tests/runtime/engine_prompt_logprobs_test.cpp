// Prompt logprobs (GenerationRequest::prompt_logprobs, what /v1/completions echo + logprobs reports): each prompt
// token's log-probability given the tokens before it equals the log-softmax of a whole-prompt forward pass read at that
// token, whether the prompt is computed in one step or in chunks, and a prompt already in the prefix cache is still
// scored in full.
#include <gtest/gtest.h>

#include <cmath>

#include "engine_test_util.h"
#include "runtime/logprobs.h"
#include "runtime/single_sequence.h"

namespace cai::test {
namespace {

constexpr int kPrompt = 40;

// A prompt of kPrompt tokens of stories260K's 512-token vocabulary, BOS first.
std::vector<int32_t> prompt_of(int seed) {
  std::vector<int32_t> p = {1};
  for (int j = 1; j < kPrompt; ++j) p.push_back(static_cast<int32_t>((seed * 131 + j * 17 + 5) % 500 + 3));
  return p;
}

// The reference: logprobs of prompt tokens 1.. from one forward pass over the prompt with every row's logits.
std::vector<float> reference(LoadedModel& lm, const std::vector<int32_t>& prompt) {
  Result<SingleSequence> seq = SingleSequence::create(*lm.model, kPrompt + 8);
  EXPECT_TRUE(seq.ok());
  Result<std::vector<float>> logits = seq->step(prompt, /*all_logits=*/true);
  EXPECT_TRUE(logits.ok()) << logits.status().to_string();
  const size_t vocab = static_cast<size_t>(lm.model->config().vocab_size);
  std::vector<float> out;
  for (size_t i = 0; i + 1 < prompt.size(); ++i)
    out.push_back(
        token_logprobs(std::span<const float>(*logits).subspan(i * vocab, vocab), prompt[i + 1], 0, *lm.tokenizer)
            .logprob);
  return out;
}

// The prompt logprobs the engine reports for `prompt` (the first event's), and that no later event repeats them.
std::vector<TokenLogprob> engine_prompt_logprobs(Engine& e, const std::vector<int32_t>& prompt) {
  GenerationRequest r = greedy(prompt, 3);
  r.top_logprobs = 2;
  r.prompt_logprobs = true;
  std::vector<std::vector<TokenLogprob>> seen;
  Collector c;
  EventCallback collect = c.callback();
  EXPECT_TRUE(e.submit(r, [&](const StreamEvent& ev) {
                 if (!ev.prompt_logprobs.empty()) seen.push_back(ev.prompt_logprobs);
                 collect(ev);
               }).ok());
  c.wait();
  EXPECT_EQ(seen.size(), 1u);
  return seen.empty() ? std::vector<TokenLogprob>{} : seen[0];
}

void expect_matches(const std::vector<TokenLogprob>& got, const std::vector<int32_t>& prompt,
                    const std::vector<float>& want) {
  ASSERT_EQ(got.size(), prompt.size());
  EXPECT_TRUE(std::isnan(got[0].logprob));
  EXPECT_TRUE(got[0].top.empty());
  for (size_t i = 1; i < got.size(); ++i) {
    EXPECT_EQ(got[i].token, prompt[i]);
    EXPECT_NEAR(got[i].logprob, want[i - 1], 1e-4) << "position " << i;
    ASSERT_EQ(got[i].top.size(), 2u);
    EXPECT_GE(got[i].top[0].second, got[i].logprob - 1e-6f);  // the best alternative is at least as likely
  }
}

TEST(EnginePromptLogprobs, EqualAWholePromptForwardPass) {
  LoadedModel ref = load("models/stories260K.gguf");
  const std::vector<int32_t> prompt = prompt_of(3);
  const std::vector<float> want = reference(ref, prompt);
  auto engine = Engine::create(load("models/stories260K.gguf"), EngineOptions{});
  ASSERT_TRUE(engine.ok());
  expect_matches(engine_prompt_logprobs(**engine, prompt), prompt, want);
  // Again: the prompt's blocks are in the prefix cache now, and must not be taken from it.
  expect_matches(engine_prompt_logprobs(**engine, prompt), prompt, want);
}

TEST(EnginePromptLogprobs, ChunkedPrefillScoresEveryPosition) {
  LoadedModel ref = load("models/stories260K.gguf");
  const std::vector<int32_t> prompt = prompt_of(5);
  const std::vector<float> want = reference(ref, prompt);
  EngineOptions o;
  o.max_tokens_per_step = 7;  // the prompt takes six steps
  auto engine = Engine::create(load("models/stories260K.gguf"), o);
  ASSERT_TRUE(engine.ok());
  expect_matches(engine_prompt_logprobs(**engine, prompt), prompt, want);
}

}  // namespace
}  // namespace cai::test
