// The engine's n > 1 requests on a real model: the choices share the prompt's KV blocks, differ with one seed yet are
// reproducible, are queued all together or not at all, and are cancelled together.
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <thread>

#include "engine_test_util.h"

namespace cai {
namespace {

using test::Collector;
using test::load;
using test::prompt_for;

GenerationRequest sampled(std::vector<int32_t> prompt, int max_tokens, int n, uint64_t seed) {
  GenerationRequest r;
  r.prompt = std::move(prompt);
  r.sampling.temperature = 1.0f;
  r.sampling.seed = seed;
  r.max_tokens = max_tokens;
  r.ignore_eos = true;
  r.n = n;
  return r;
}

TEST(EngineChoices, ShareThePromptsKvBlocks) {
  EngineOptions o;
  o.block_size = 16;
  o.prefix_caching = false;  // the sharing must not depend on the prefix cache
  auto engine = Engine::create(load("models/TinyStories-656K-Q8_0.gguf"), o);
  ASSERT_TRUE(engine.ok());
  Engine& e = **engine;
  const std::vector<int32_t> prompt = prompt_for(3, 200);  // 201 tokens: 12 full blocks + 9
  const int n_prompt_blocks = 13;
  Collector c(4);
  std::atomic<int> peak_blocks{0};
  EventCallback record = c.callback();
  ASSERT_TRUE(e.submit(sampled(prompt, 8, 4, 11), [&](const StreamEvent& ev) {
                 peak_blocks = std::max(peak_blocks.load(), e.stats().kv_blocks_used);
                 record(ev);
               }).ok());
  c.wait();
  for (int i = 0; i < 4; ++i) {
    const Collector::Choice& ch = c.choices[static_cast<size_t>(i)];
    EXPECT_EQ(ch.tokens.size(), 8u) << "choice " << i;
    EXPECT_EQ(ch.last.finish, FinishReason::kLength);
    EXPECT_EQ(ch.last.n_prompt_tokens, 201);
    EXPECT_EQ(ch.last.n_cached_prompt_tokens, i == 0 ? 0 : 192) << "choice " << i;
  }
  // Four separate copies would take 4 × 13 blocks; shared, the prompt's 12 full blocks are held once and each
  // choice adds only its own tail.
  EXPECT_LE(peak_blocks.load(), n_prompt_blocks + 3);
  EXPECT_EQ(e.stats().prefix_hit_tokens, 3u * 192u);
  EXPECT_EQ(e.stats().prompt_tokens, 201u);  // counted once
  EXPECT_EQ(e.stats().kv_blocks_used, 0);

  // Choice 0 keeps the request's seed: it is what n = 1 gives.
  Collector one;
  ASSERT_TRUE(e.submit(sampled(prompt, 8, 1, 11), one.callback()).ok());
  one.wait();
  EXPECT_EQ(one.tokens, c.choices[0].tokens);
}

TEST(EngineChoices, DifferFromEachOtherButRepeatWithTheSameSeed) {
  auto engine = Engine::create(load("models/TinyStories-656K-Q8_0.gguf"), EngineOptions{});
  ASSERT_TRUE(engine.ok());
  Engine& e = **engine;
  const std::vector<int32_t> prompt = {1, 80, 147, 201, 282, 57};  // "Once upon a time"
  auto run = [&](uint64_t seed) {
    Collector c(4);
    EXPECT_TRUE(e.submit(sampled(prompt, 24, 4, seed), c.callback()).ok());
    c.wait();
    std::vector<std::vector<int32_t>> out;
    for (const Collector::Choice& ch : c.choices) out.push_back(ch.tokens);
    return out;
  };
  const auto first = run(42), again = run(42), other = run(43);
  EXPECT_EQ(first, again);
  EXPECT_NE(first, other);
  std::vector<std::vector<int32_t>> distinct = first;
  std::sort(distinct.begin(), distinct.end());
  EXPECT_EQ(std::unique(distinct.begin(), distinct.end()) - distinct.begin(), 4) << "the choices are not distinct";
}

TEST(EngineChoices, QueuedAllOrNoneAndCancelledTogether) {
  EngineOptions o;
  o.max_batch = 1;
  o.max_queue = 4;
  auto engine = Engine::create(load("models/TinyStories-656K-Q8_0.gguf"), o);
  ASSERT_TRUE(engine.ok());
  Engine& e = **engine;
  Collector busy, three(3);
  auto busy_id = e.submit(sampled(prompt_for(1, 10), 400, 1, 1), busy.callback());
  ASSERT_TRUE(busy_id.ok());
  auto three_id = e.submit(sampled(prompt_for(2, 10), 8, 3, 1), three.callback());
  ASSERT_TRUE(three_id.ok());
  for (int i = 0; i < 1000 && e.stats().n_waiting != 3; ++i) std::this_thread::sleep_for(std::chrono::milliseconds(5));
  ASSERT_EQ(e.stats().n_waiting, 3);  // the batch of one is taken by the first request
  Collector two(2);
  auto refused = e.submit(sampled(prompt_for(3, 10), 8, 2, 1), two.callback());
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(refused.status().code(), StatusCode::kResourceExhausted);
  EXPECT_EQ(e.stats().n_waiting, 3);  // nothing of the refused request was queued
  Collector one;
  auto fits = e.submit(sampled(prompt_for(4, 10), 8, 1, 1), one.callback());
  ASSERT_TRUE(fits.ok());
  e.cancel(*three_id);
  three.wait();
  for (const Collector::Choice& ch : three.choices) EXPECT_EQ(ch.last.finish, FinishReason::kCancelled);
  e.cancel(*busy_id);
  busy.wait();
  one.wait();
  EXPECT_EQ(one.last.finish, FinishReason::kLength);
  EXPECT_EQ(e.stats().kv_blocks_used, 0);
  EXPECT_EQ(
      e.submit(sampled(prompt_for(5, 10), 8, GenerationRequest::kMaxChoices + 1, 1), one.callback()).status().code(),
      StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace cai
