// The serving engine on a real model: batch invariance, prefix reuse, preemption and cancellation lose nothing.
#include <gtest/gtest.h>

#include <condition_variable>
#include <future>
#include <mutex>

#include "engine_test_util.h"

namespace cai {
namespace {

using test::Collector;
using test::greedy;
using test::load;
using test::prompt_for;
using test::run_alone;

class EngineOn : public ::testing::TestWithParam<std::string> {};

// Concurrent requests (more than one 8-row GEMM pass) return exactly their solo tokens. The emulated device runs the
// GPU kernels ~300× slower than the CPU kernels, so it gets 12 shorter requests instead of 16.
TEST_P(EngineOn, ConcurrentRequestsMatchTheirSoloRuns) {
  const bool emulated = GetParam() != "cpu";
  const int n_req = emulated ? 12 : 16, n_tok = emulated ? 8 : 24;
  EngineOptions o;
  o.max_batch = 16;
  o.max_tokens_per_step = 256;
  auto engine = Engine::create(load("models/TinyStories-656K-Q8_0.gguf", GetParam()), o);
  ASSERT_TRUE(engine.ok()) << engine.status().to_string();
  Engine& e = **engine;
  std::vector<GenerationRequest> reqs;
  for (int i = 0; i < n_req; ++i) reqs.push_back(greedy(prompt_for(i, 5 + i * 3), n_tok));
  std::vector<std::vector<int32_t>> solo;
  for (const auto& r : reqs) solo.push_back(run_alone(e, r));
  std::vector<Collector> together(static_cast<size_t>(n_req));
  for (size_t i = 0; i < reqs.size(); ++i) ASSERT_TRUE(e.submit(reqs[i], together[i].callback()).ok());
  for (size_t i = 0; i < reqs.size(); ++i) {
    together[i].wait();
    EXPECT_EQ(together[i].tokens, solo[i]) << "request " << i;
    EXPECT_EQ(together[i].last.finish, FinishReason::kLength);
    EXPECT_EQ(together[i].tokens.size(), static_cast<size_t>(n_tok));
  }
  EXPECT_GT(e.stats().steps, 0u);
}

INSTANTIATE_TEST_SUITE_P(Devices, EngineOn, ::testing::Values("cpu", "simt:0"),
                         [](const auto& info) { return test::device_param_name(info.param); });

TEST(Engine, SharedPrefixIsComputedOnce) {
  EngineOptions o;
  o.block_size = 16;
  auto engine = Engine::create(load("models/TinyStories-656K-Q8_0.gguf"), o);
  ASSERT_TRUE(engine.ok());
  Engine& e = **engine;
  std::vector<int32_t> system = prompt_for(99, 200);
  std::vector<int32_t> a = system, b = system;
  a.insert(a.end(), {10, 11, 12});
  b.insert(b.end(), {20, 21, 22, 23});
  run_alone(e, greedy(a, 4));
  const EngineStats before = e.stats();
  Collector c;
  ASSERT_TRUE(e.submit(greedy(b, 4), c.callback()).ok());
  c.wait();
  const EngineStats after = e.stats();
  // The 201-token shared prefix holds 12 full blocks of 16: 192 tokens are reused, only the rest is computed.
  EXPECT_EQ(c.last.n_cached_prompt_tokens, 192);
  EXPECT_EQ(after.prefix_hit_tokens - before.prefix_hit_tokens, 192u);
  EXPECT_EQ(after.computed_prompt_tokens - before.computed_prompt_tokens, b.size() - 192 + 3);  // + 3 decode steps
}

TEST(Engine, TinyKvCachePreemptsButLosesNoRequest) {
  EngineOptions o;
  o.block_size = 4;
  o.n_kv_blocks = 24;  // 96 slots for 6 requests of up to ~40 tokens each
  o.max_batch = 6;
  auto engine = Engine::create(load("models/TinyStories-656K-Q8_0.gguf"), o);
  ASSERT_TRUE(engine.ok());
  Engine& e = **engine;
  std::vector<GenerationRequest> reqs;
  for (int i = 0; i < 6; ++i) reqs.push_back(greedy(prompt_for(i, 10 + i), 30));
  std::vector<std::vector<int32_t>> solo;
  for (const auto& r : reqs) solo.push_back(run_alone(e, r));
  std::vector<Collector> together(6);
  for (int i = 0; i < 6; ++i)
    ASSERT_TRUE(e.submit(reqs[static_cast<size_t>(i)], together[static_cast<size_t>(i)].callback()).ok());
  for (int i = 0; i < 6; ++i) {
    together[static_cast<size_t>(i)].wait();
    EXPECT_EQ(together[static_cast<size_t>(i)].tokens, solo[static_cast<size_t>(i)]) << "request " << i;
  }
  EXPECT_GT(e.stats().preemptions, 0u);
  EXPECT_EQ(e.stats().kv_blocks_used, 0);
}

// A context and a KV size the user both gave must agree: when one sequence of -c does not fit, creation fails naming
// the context, the bytes it needs, the KV size given and what to change; a KV cache that holds it starts with the
// context asked for. Sized automatically, the cache keeps serving the context that fits.
TEST(Engine, ContextLargerThanTheGivenKvCacheIsRefused) {
  const size_t block_bytes = load("models/TinyStories-656K-Q8_0.gguf").model->kv_spec().bytes_per_token() * 16;
  EngineOptions o;
  o.block_size = 16;
  o.ctx_size = 200;                     // 13 blocks
  o.kv_memory_bytes = 8 * block_bytes;  // 128 tokens
  auto small = Engine::create(load("models/TinyStories-656K-Q8_0.gguf"), o);
  ASSERT_FALSE(small.ok());
  EXPECT_EQ(small.status().code(), StatusCode::kInvalidArgument);
  const std::string need = fmt::format("-c 200 needs {} bytes of KV cache for one sequence", 13 * block_bytes);
  EXPECT_NE(small.status().message().find(need), std::string::npos) << small.status().message();
  EXPECT_NE(small.status().message().find(fmt::format("but --kv-memory {} bytes holds 8 blocks (128 tokens): raise "
                                                      "--kv-memory to at least {} bytes or lower -c to at most 128",
                                                      8 * block_bytes, 13 * block_bytes)),
            std::string::npos)
      << small.status().message();

  o.kv_memory_bytes = 0;
  o.n_kv_blocks = 8;
  auto few_blocks = Engine::create(load("models/TinyStories-656K-Q8_0.gguf"), o);
  ASSERT_FALSE(few_blocks.ok());
  EXPECT_NE(few_blocks.status().message().find("but --kv-blocks 8 holds 128 tokens: raise --kv-blocks to at least 13 "
                                               "or lower -c to at most 128"),
            std::string::npos)
      << few_blocks.status().message();

  o.n_kv_blocks = 13;
  auto fits = Engine::create(load("models/TinyStories-656K-Q8_0.gguf"), o);
  ASSERT_TRUE(fits.ok()) << fits.status().to_string();
  EXPECT_EQ((*fits)->ctx_size(), 200);

  o.n_kv_blocks = 0;
  o.ctx_size = 1 << 30;  // far beyond the automatic 256 MiB: a warning, and the context that fits
  auto automatic = Engine::create(load("models/TinyStories-656K-Q8_0.gguf"), o);
  ASSERT_TRUE(automatic.ok()) << automatic.status().to_string();
  EXPECT_EQ((*automatic)->ctx_size(), static_cast<int>((size_t(256) << 20) / block_bytes * 16));
}

TEST(Engine, CancelEndsTheRequestAndFreesItsBlocks) {
  auto engine = Engine::create(load("models/TinyStories-656K-Q8_0.gguf"), EngineOptions{});
  ASSERT_TRUE(engine.ok());
  Engine& e = **engine;
  EXPECT_GT(e.stats().kv_blocks_total, 0);  // the pool is visible before the first step
  EXPECT_EQ(e.stats().steps, 0u);
  Collector c;
  auto id = e.submit(greedy(prompt_for(1, 20), 400), c.callback());
  ASSERT_TRUE(id.ok());
  e.cancel(*id);
  c.wait();
  EXPECT_EQ(c.last.finish, FinishReason::kCancelled);
  EXPECT_LT(c.tokens.size(), 400u);
  EXPECT_EQ(e.stats().kv_blocks_used, 0);
}

TEST(Engine, RejectsBadRequests) {
  EngineOptions o;
  o.max_queue = 1;
  auto engine = Engine::create(load("models/TinyStories-656K-Q8_0.gguf"), o);
  ASSERT_TRUE(engine.ok());
  Engine& e = **engine;
  Collector c;
  EXPECT_EQ(e.submit(greedy({}, 4), c.callback()).status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(e.submit(greedy({1, 5000}, 4), c.callback()).status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(e.submit(greedy(prompt_for(1, 10), 100000), c.callback()).status().code(), StatusCode::kInvalidArgument);
  GenerationRequest bad = greedy({1, 2}, 4);
  bad.sampling.top_p = 0;
  EXPECT_EQ(e.submit(bad, c.callback()).status().code(), StatusCode::kInvalidArgument);
}

TEST(Engine, StopStringsEndTheText) {
  auto engine = Engine::create(load("models/TinyStories-656K-Q8_0.gguf"), EngineOptions{});
  ASSERT_TRUE(engine.ok());
  Engine& e = **engine;
  const std::vector<int32_t> prompt = {1, 80, 147, 201, 282, 57};  // "Once upon a time"
  Collector full;
  ASSERT_TRUE(e.submit(greedy(prompt, 32), full.callback()).ok());
  full.wait();
  ASSERT_NE(full.text.find("Lily"), std::string::npos) << full.text;
  GenerationRequest r = greedy(prompt, 32);
  r.stop = {"Lily"};
  Collector c;
  ASSERT_TRUE(e.submit(r, c.callback()).ok());
  c.wait();
  EXPECT_EQ(c.text, full.text.substr(0, full.text.find("Lily")));
  EXPECT_EQ(c.last.finish, FinishReason::kStop);
}

}  // namespace
}  // namespace cai
