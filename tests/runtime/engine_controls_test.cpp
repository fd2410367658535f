// What a request steers in the engine on a real model: logit_bias (a -100 bias bans a token the model would write,
// +100 forces one) and the reasoning budget (after the budget "\n</think>\n\n" is forced and the answer follows).
#include <gtest/gtest.h>

#include <algorithm>
#include <map>

#include "engine_test_util.h"
#include "runtime/reasoning_budget.h"
#include "tokenizer/reasoning_parser.h"

namespace cai {
namespace {

using test::Collector;
using test::greedy;
using test::load;
using test::run_alone;

TEST(EngineControls, LogitBiasBansAndForcesTokens) {
  auto engine = Engine::create(load("models/TinyStories-656K-Q8_0.gguf"), EngineOptions{});
  ASSERT_TRUE(engine.ok());
  Engine& e = **engine;
  const std::vector<int32_t> prompt = {1, 80, 147, 201, 282, 57};  // "Once upon a time"
  const std::vector<int32_t> plain = run_alone(e, greedy(prompt, 32));
  std::map<int32_t, int> counts;
  for (int32_t t : plain) ++counts[t];
  const int32_t common =
      std::max_element(counts.begin(), counts.end(), [](auto& a, auto& b) { return a.second < b.second; })->first;
  GenerationRequest banned = greedy(prompt, 32);
  banned.sampling.logit_bias = {{common, -100.0f}};
  const std::vector<int32_t> without = run_alone(e, banned);
  EXPECT_EQ(std::count(without.begin(), without.end(), common), 0) << "token " << common << " was banned";
  EXPECT_NE(without, plain);
  GenerationRequest forced = greedy(prompt, 8);
  forced.sampling.logit_bias = {{500, 100.0f}};
  EXPECT_EQ(run_alone(e, forced), std::vector<int32_t>(8, 500));
  GenerationRequest outside = greedy(prompt, 8);
  outside.sampling.logit_bias = {{e.model().model->config().vocab_size, 1.0f}};
  Collector c;
  EXPECT_EQ(e.submit(outside, c.callback()).status().code(), StatusCode::kInvalidArgument);
}

// stories260K can spell "</think>" (its SentencePiece vocabulary falls back to bytes).
TEST(EngineControls, ReasoningBudgetClosesThinkAndTheAnswerFollows) {
  auto engine = Engine::create(load("models/stories260K.gguf"), EngineOptions{});
  ASSERT_TRUE(engine.ok());
  Engine& e = **engine;
  const Tokenizer& tok = *e.model().tokenizer;
  const std::vector<int32_t> prompt = tok.encode("Once upon a time", true);
  const std::vector<int32_t> close = reasoning_close_tokens(tok);
  ASSERT_FALSE(close.empty());
  for (int budget : {0, 6}) {
    GenerationRequest r = greedy(prompt, 40);
    r.prompt_opens_think = true;
    r.max_reasoning_tokens = budget;
    Collector c;
    ASSERT_TRUE(e.submit(r, c.callback()).ok());
    c.wait();
    ASSERT_GE(c.tokens.size(), budget + close.size());
    EXPECT_EQ(std::vector<int32_t>(c.tokens.begin() + budget, c.tokens.begin() + budget + long(close.size())), close);
    ReasoningParser parser(/*prompt_opened_think=*/true);
    ReasoningDelta d = parser.push(c.text), rest = parser.finish();
    const std::string before = c.text.substr(0, c.text.find(kReasoningClose));
    EXPECT_EQ(d.reasoning + rest.reasoning, before.empty() ? "" : before + "\n");  // space after <think> is dropped
    EXPECT_FALSE((d.content + rest.content).empty()) << c.text;
  }
  // Output that never opened <think> is not touched.
  GenerationRequest r = greedy(prompt, 20);
  r.max_reasoning_tokens = 2;
  EXPECT_EQ(run_alone(e, r), run_alone(e, greedy(prompt, 20)));
}

}  // namespace
}  // namespace cai
