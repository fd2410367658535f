// Scheduler: chunked prefill, decode-first order, prefix hits, preemption by recompute, batch limits,
// cancel, rejection, budget hook, and a randomized soak against a simulated KV cache.
#include "runtime/sched/scheduler.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <numeric>
#include <random>
#include <set>
#include <utility>
#include <vector>

#include "runtime_test_util.h"
#include "scheduler_test_util.h"

namespace cai {
namespace {

using test::Ids;
using test::iota_tokens;
using test::make_scheduler;

// Stands in for the engine: checks each scheduled range against a simulated KV cache (every slot remembers
// the token and position written there), writes the new positions, samples token 1000·id + k for the k-th
// output, and feeds the step back.
struct FakeEngine {
  explicit FakeEngine(Scheduler& s)
      : sched(s), kv(size_t(s.options().n_blocks) * size_t(s.options().block_size), {-1, -1}) {}

  static int32_t token_for(uint64_t id, int k) { return int32_t(1000 * id) + k; }

  SchedulerOutput step(std::set<uint64_t> stop_ids = {}) {
    const std::vector<uint64_t> was_running = sched.running();
    SchedulerOutput out = sched.schedule();
    // Running requests come first in admission order; a step that preempts admits nobody (not even the
    // request it just preempted).
    for (size_t i = 0; i < out.requests.size(); ++i) {
      const uint64_t id = out.requests[i].id;
      EXPECT_EQ(std::count(out.preempted.begin(), out.preempted.end(), id), 0) << "request " << id;
      if (i < was_running.size() && id == was_running[i]) continue;
      EXPECT_TRUE(out.preempted.empty()) << "request " << id << " admitted in a preempting step";
      EXPECT_EQ(std::count(was_running.begin(), was_running.end(), id), 0) << "request " << id;
    }
    std::vector<SampledToken> sampled;
    const int bs = sched.options().block_size;
    for (const ScheduledRequest& s : out.requests) {
      const SchedRequest* r = sched.request(s.id);
      EXPECT_NE(r, nullptr);
      if (!r) continue;
      EXPECT_EQ(r->status, RequestStatus::kRunning);
      EXPECT_EQ(s.start, r->n_computed);
      EXPECT_GE(int(s.block_table.size()) * bs, s.start + s.n_new);
      EXPECT_EQ(s.tokens, Ids(r->tokens.begin() + s.start, r->tokens.begin() + s.start + s.n_new));
      EXPECT_EQ(s.sample, s.start + s.n_new == int(r->tokens.size()));
      for (int p = 0; p < s.start; ++p) {  // everything before the range must already be in the cache
        if (kv[size_t(kv_slot(s.block_table, bs, p))] != std::make_pair(r->tokens[size_t(p)], p)) ++n_bad_reads;
      }
      for (int p = s.start; p < s.start + s.n_new; ++p)
        kv[size_t(kv_slot(s.block_table, bs, p))] = {r->tokens[size_t(p)], p};
      if (s.sample) {
        const int32_t t = token_for(s.id, r->n_generated());
        outputs[s.id].push_back(t);
        sampled.push_back({s.id, t, stop_ids.count(s.id) > 0});
      }
    }
    Result<std::vector<FinishedRequest>> done = sched.update(out, sampled);
    EXPECT_TRUE(done.ok()) << done.status().to_string();
    if (done.ok()) finished.insert(finished.end(), done.value().begin(), done.value().end());
    return out;
  }

  Scheduler& sched;
  std::vector<std::pair<int32_t, int>> kv;  // per slot: (token, position)
  int n_bad_reads = 0;
  std::map<uint64_t, Ids> outputs;
  std::vector<FinishedRequest> finished;
};

Ids expected_outputs(uint64_t id, int n) {
  Ids t;
  for (int k = 0; k < n; ++k) t.push_back(FakeEngine::token_for(id, k));
  return t;
}

TEST(Scheduler, ChunkedPrefillTakesFourSteps) {
  Scheduler s = make_scheduler(4, 256, 16, 100);
  ASSERT_TRUE(s.add(1, iota_tokens(1000), 3).ok());
  FakeEngine e(s);
  const int starts[] = {0, 256, 512, 768};
  for (int i = 0; i < 4; ++i) {
    SchedulerOutput out = e.step();
    ASSERT_EQ(out.requests.size(), 1u);
    EXPECT_EQ(out.requests[0].start, starts[i]);
    EXPECT_EQ(out.requests[0].n_new, i < 3 ? 256 : 232);
    EXPECT_EQ(out.requests[0].sample, i == 3);
  }
  EXPECT_EQ(s.request(1)->n_generated(), 1);
  e.step();
  e.step();
  ASSERT_EQ(e.finished.size(), 1u);
  EXPECT_EQ(e.finished[0].status, RequestStatus::kFinishedLength);
  EXPECT_EQ(e.finished[0].n_generated, 3);
  EXPECT_EQ(e.outputs[1], expected_outputs(1, 3));
  EXPECT_EQ(s.request(1), nullptr);
  EXPECT_EQ(s.kv().pool().n_used(), 0);
  EXPECT_EQ(s.counters().steps, 6u);
  EXPECT_EQ(s.counters().computed_tokens, 1002u);
  EXPECT_EQ(e.n_bad_reads, 0);
}

TEST(Scheduler, DecodesRunBeforeNewPrefills) {
  Scheduler s = make_scheduler(4, 256, 16, 100);
  FakeEngine e(s);
  ASSERT_TRUE(s.add(1, iota_tokens(10), 5).ok());
  e.step();
  ASSERT_TRUE(s.add(2, iota_tokens(600, 5000), 5).ok());
  SchedulerOutput out = e.step();
  ASSERT_EQ(out.requests.size(), 2u);
  EXPECT_EQ(out.requests[0].id, 1u);
  EXPECT_EQ(out.requests[0].n_new, 1);
  EXPECT_TRUE(out.requests[0].sample);
  EXPECT_EQ(out.requests[1].id, 2u);
  EXPECT_EQ(out.requests[1].n_new, 255);
  EXPECT_EQ(out.n_tokens, 256);
}

TEST(Scheduler, SecondRequestComputesOnlyItsNewTokens) {
  Scheduler s = make_scheduler(4, 512, 16, 100);
  FakeEngine e(s);
  Ids shared = iota_tokens(64, 7);
  Ids a = shared, b = shared;
  for (int i = 0; i < 10; ++i) a.push_back(200 + i);
  for (int i = 0; i < 20; ++i) b.push_back(300 + i);
  ASSERT_TRUE(s.add(1, a, 4).ok());
  e.step();
  ASSERT_TRUE(s.add(2, b, 4).ok());
  SchedulerOutput out = e.step();
  ASSERT_EQ(out.requests.size(), 2u);
  const ScheduledRequest& rb = out.requests[1];
  EXPECT_EQ(rb.id, 2u);
  EXPECT_EQ(rb.start, 64);
  EXPECT_EQ(rb.n_new, 20);
  EXPECT_EQ(Ids(rb.block_table.begin(), rb.block_table.begin() + 4),
            Ids(out.requests[0].block_table.begin(), out.requests[0].block_table.begin() + 4));
  EXPECT_EQ(s.kv().pool().ref_count(rb.block_table[0]), 2);
  EXPECT_EQ(s.request(2)->n_cached_prompt_tokens, 64);
  EXPECT_EQ(s.counters().prefix_hit_tokens, 64u);
  while (s.has_work()) e.step();
  EXPECT_EQ(e.outputs[2], expected_outputs(2, 4));
  EXPECT_EQ(e.n_bad_reads, 0);

  // After both finished, the same prompt again: only its last token runs.
  ASSERT_TRUE(s.add(3, iota_tokens(32), 1).ok());
  e.step();
  ASSERT_TRUE(s.add(4, iota_tokens(32), 1).ok());
  out = e.step();
  ASSERT_EQ(out.requests.size(), 1u);
  EXPECT_EQ(out.requests[0].start, 16);  // 32 tokens = 2 blocks; the hit is capped to leave one token
  EXPECT_EQ(out.requests[0].n_new, 16);
  EXPECT_TRUE(out.requests[0].sample);
}

// The choices of an n > 1 request: the followers wait until the leader's prompt is computed, then take its full
// prompt blocks by reference (prefix caching on or off) and compute only the rest of the prompt.
TEST(Scheduler, FollowersShareTheirLeadersPromptBlocks) {
  for (bool caching : {true, false}) {
    SCOPED_TRACE(caching ? "prefix caching" : "no prefix caching");
    Scheduler s = make_scheduler(4, 32, 16, 100, caching);
    FakeEngine e(s);
    const Ids prompt = iota_tokens(70, 7);  // 4 full blocks + 6 tokens
    ASSERT_TRUE(s.add(1, prompt, 4).ok());
    ASSERT_TRUE(s.add(2, prompt, 4, /*follows=*/1).ok());
    ASSERT_TRUE(s.add(3, prompt, 4, /*follows=*/1).ok());
    for (int step = 0; step < 3; ++step) EXPECT_EQ(e.step().requests.size(), 1u) << "step " << step;  // prefill
    SchedulerOutput out = e.step();
    ASSERT_EQ(out.requests.size(), 3u);
    const Ids lead(out.requests[0].block_table.begin(), out.requests[0].block_table.begin() + 4);
    for (size_t i = 1; i < 3; ++i) {
      EXPECT_EQ(out.requests[i].start, 64);
      EXPECT_EQ(out.requests[i].n_new, 6);
      EXPECT_EQ(Ids(out.requests[i].block_table.begin(), out.requests[i].block_table.begin() + 4), lead);
      EXPECT_EQ(s.request(out.requests[i].id)->n_cached_prompt_tokens, 64);
    }
    EXPECT_EQ(s.kv().pool().ref_count(lead[0]), 3);
    EXPECT_EQ(s.kv().pool().n_used(), 5 + 2);  // the leader's 5 blocks, one more per follower
    while (s.has_work()) e.step();
    for (uint64_t id : {1, 2, 3}) EXPECT_EQ(e.outputs[id], expected_outputs(id, 4)) << "request " << id;
    EXPECT_EQ(e.n_bad_reads, 0);
    EXPECT_EQ(s.kv().pool().n_used(), 0);
  }
}

TEST(Scheduler, PreemptsNewestWhenBlocksRunOutAndResumes) {
  Scheduler s = make_scheduler(4, 64, 4, 6);  // 24 KV slots
  FakeEngine e(s);
  ASSERT_TRUE(s.add(1, iota_tokens(8), 10).ok());
  ASSERT_TRUE(s.add(2, iota_tokens(8, 100), 10).ok());
  bool saw_preemption = false;
  for (int i = 0; i < 100 && s.has_work(); ++i) {
    SchedulerOutput out = e.step();
    if (!out.preempted.empty() && !saw_preemption) {
      saw_preemption = true;
      EXPECT_EQ(out.preempted, std::vector<uint64_t>{2});  // the most recently admitted one
      ASSERT_EQ(out.requests.size(), 1u);
      EXPECT_EQ(out.requests[0].id, 1u);
      const SchedRequest* r2 = s.request(2);
      ASSERT_NE(r2, nullptr);
      EXPECT_EQ(r2->status, RequestStatus::kPreempted);
      EXPECT_EQ(r2->n_computed, 0);
      EXPECT_GT(r2->n_generated(), 0);  // what it generated stays and is recomputed
      EXPECT_EQ(s.waiting().front(), 2u);
      EXPECT_FALSE(s.kv().has(2));
    }
  }
  EXPECT_TRUE(saw_preemption);
  EXPECT_GE(s.counters().preemptions, 1u);
  EXPECT_FALSE(s.has_work());
  EXPECT_EQ(e.outputs[1], expected_outputs(1, 10));
  EXPECT_EQ(e.outputs[2], expected_outputs(2, 10));
  EXPECT_EQ(e.finished.size(), 2u);
  EXPECT_EQ(e.n_bad_reads, 0);
  EXPECT_EQ(s.kv().pool().n_free(), 6);
}

TEST(Scheduler, RespectsMaxBatch) {
  Scheduler s = make_scheduler(2, 512, 16, 200);
  FakeEngine e(s);
  for (uint64_t id = 1; id <= 5; ++id) ASSERT_TRUE(s.add(id, iota_tokens(20, int32_t(id) * 50), 3).ok());
  SchedulerOutput out = e.step();
  EXPECT_EQ(out.requests.size(), 2u);
  EXPECT_EQ(s.n_running(), 2);
  EXPECT_EQ(s.n_waiting(), 3);
  while (s.has_work()) EXPECT_LE(e.step().requests.size(), 2u);
  EXPECT_EQ(e.finished.size(), 5u);
}

TEST(Scheduler, CancelFreesBlocksAtOnce) {
  Scheduler s = make_scheduler(1, 512, 16, 20);
  FakeEngine e(s);
  ASSERT_TRUE(s.add(1, iota_tokens(40), 8).ok());
  ASSERT_TRUE(s.add(2, iota_tokens(40, 500), 8).ok());
  e.step();
  EXPECT_EQ(s.kv().pool().n_used(), 3);
  ASSERT_TRUE(s.cancel(2).ok());  // waiting
  EXPECT_EQ(s.n_waiting(), 0);
  Result<FinishedRequest> c = s.cancel(1);  // running
  ASSERT_TRUE(c.ok());
  EXPECT_EQ(c->status, RequestStatus::kFinishedCancelled);
  EXPECT_EQ(c->n_generated, 1);
  EXPECT_EQ(s.kv().pool().n_used(), 0);
  EXPECT_EQ(s.n_running(), 0);
  EXPECT_EQ(s.cancel(1).status().code(), StatusCode::kNotFound);
  EXPECT_EQ(s.finish(1, RequestStatus::kRunning).status().code(), StatusCode::kInvalidArgument);

  // Cancelled between schedule() and update(): the step's result for it is dropped.
  ASSERT_TRUE(s.add(3, iota_tokens(10), 8).ok());
  SchedulerOutput out = s.schedule();
  ASSERT_EQ(out.requests.size(), 1u);
  ASSERT_TRUE(s.cancel(3).ok());
  const SampledToken t{3, 7, false};
  Result<std::vector<FinishedRequest>> done = s.update(out, std::span(&t, 1));
  ASSERT_TRUE(done.ok());
  EXPECT_TRUE(done->empty());
  EXPECT_EQ(s.kv().pool().n_used(), 0);
}

TEST(Scheduler, StopFinishesEarly) {
  Scheduler s = make_scheduler(4, 512, 16, 20);
  FakeEngine e(s);
  ASSERT_TRUE(s.add(1, iota_tokens(5), 50).ok());
  e.step();
  e.step({1});
  ASSERT_EQ(e.finished.size(), 1u);
  EXPECT_EQ(e.finished[0].status, RequestStatus::kFinishedStop);
  EXPECT_EQ(e.finished[0].n_generated, 2);
  EXPECT_FALSE(s.has_work());
}

TEST(Scheduler, RejectsBadRequests) {
  Scheduler s = make_scheduler(4, 512, 4, 4);      // 16 KV positions in all
  EXPECT_TRUE(s.add(1, iota_tokens(10), 7).ok());  // 10 + 7 - 1 = 16 positions: fits alone
  Status st = s.add(2, iota_tokens(10), 8);
  EXPECT_EQ(st.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(st.message().find("needs 5 KV blocks"), std::string::npos) << st.message();
  EXPECT_EQ(s.add(1, iota_tokens(3), 1).code(), StatusCode::kInvalidArgument);  // duplicate id
  EXPECT_EQ(s.add(3, {}, 1).code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(s.add(4, iota_tokens(3), 0).code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(s.n_waiting(), 1);

  EXPECT_EQ(Scheduler::create({0, 512, 16, 10, true}).status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(Scheduler::create({4, 0, 16, 10, true}).status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(Scheduler::create({4, 512, 0, 10, true}).status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(Scheduler::create({4, 512, 16, 0, true}).status().code(), StatusCode::kInvalidArgument);
}

TEST(Scheduler, UpdateChecksTheStep) {
  Scheduler s = make_scheduler(4, 512, 16, 20);
  EXPECT_EQ(s.update({}, {}).status().code(), StatusCode::kInternal);
  ASSERT_TRUE(s.add(1, iota_tokens(5), 3).ok());
  SchedulerOutput out = s.schedule();
  EXPECT_EQ(s.update(out, {}).status().code(), StatusCode::kInternal);  // the sampled token is missing
  EXPECT_EQ(s.request(1)->n_computed, 0);
  const SampledToken t{1, 42, false};
  ASSERT_TRUE(s.update(out, std::span(&t, 1)).ok());
  EXPECT_EQ(s.request(1)->n_computed, 5);
  EXPECT_EQ(s.request(1)->tokens.back(), 42);
}

TEST(Scheduler, TokenBudgetHookClamps) {
  Scheduler s = make_scheduler(4, 256, 16, 100);
  EXPECT_EQ(s.set_token_budget(1), 4);
  EXPECT_EQ(s.set_token_budget(1000), 256);
  EXPECT_EQ(s.set_token_budget(100), 100);
  FakeEngine e(s);
  ASSERT_TRUE(s.add(1, iota_tokens(250), 1).ok());
  EXPECT_EQ(e.step().n_tokens, 100);
  EXPECT_EQ(e.step().n_tokens, 100);
  s.set_token_budget(256);
  EXPECT_EQ(e.step().n_tokens, 50);
}

// Invariants of the pool against every running request's block table.
void check_blocks(const Scheduler& s) {
  const BlockPool& pool = s.kv().pool();
  std::vector<int> owners(size_t(pool.n_total()), 0);
  for (uint64_t id : s.running()) {
    std::span<const int32_t> table = s.kv().block_table(id);
    std::set<int32_t> distinct(table.begin(), table.end());
    ASSERT_EQ(distinct.size(), table.size()) << "request " << id << " holds a block twice";
    ASSERT_GE(int(table.size()) * s.options().block_size, s.request(id)->n_computed);
    for (int32_t b : table) ++owners[size_t(b)];
  }
  for (uint64_t id : s.waiting()) ASSERT_FALSE(s.kv().has(id)) << "waiting request " << id << " holds blocks";
  int n_zero = 0;
  for (int32_t b = 0; b < pool.n_total(); ++b) {
    ASSERT_EQ(pool.ref_count(b), owners[size_t(b)]) << "block " << b;
    if (owners[size_t(b)] > 1) {
      ASSERT_TRUE(pool.block_hash(b).has_value()) << "shared block " << b << " uncached";
    }
    n_zero += owners[size_t(b)] == 0;
  }
  ASSERT_EQ(pool.n_free(), n_zero);
  std::vector<int32_t> free_list = pool.free_list();
  ASSERT_EQ(int(free_list.size()), n_zero);
  for (int32_t b : free_list) ASSERT_EQ(owners[size_t(b)], 0) << "held block " << b << " in the free list";
}

void soak(uint32_t seed, bool prefix_caching) {
  Scheduler s = make_scheduler(6, 32, 4, 24, prefix_caching);  // 96 KV slots: constant preemption
  FakeEngine e(s);
  std::mt19937 rng(seed);
  auto uniform = [&](int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(rng); };
  std::map<uint64_t, int> max_tokens;
  std::set<uint64_t> cancelled;
  const uint64_t n_requests = 150;
  uint64_t next_id = 1;
  for (int iter = 0; iter < 20000 && (next_id <= n_requests || s.has_work()); ++iter) {
    while (next_id <= n_requests && uniform(0, 2) == 0) {
      Ids prompt = iota_tokens(uniform(0, 24), uniform(0, 3) * 1000);  // a few shared prefix families
      for (int n = uniform(1, 16); n > 0; --n) prompt.push_back(uniform(0, 30));
      const int m = uniform(1, 30);
      ASSERT_TRUE(s.add(next_id, prompt, m).ok());
      max_tokens[next_id++] = m;
    }
    if (s.has_work() && uniform(0, 99) < 2) {
      const uint64_t victim = uint64_t(uniform(1, int(next_id) - 1));
      if (s.cancel(victim).ok()) cancelled.insert(victim);
    }
    SchedulerOutput out = e.step();
    ASSERT_LE(out.n_tokens, 32);
    ASSERT_LE(s.n_running(), 6);
    ASSERT_NO_FATAL_FAILURE(check_blocks(s));
  }
  ASSERT_FALSE(s.has_work());
  ASSERT_EQ(next_id, n_requests + 1);
  for (const FinishedRequest& f : e.finished) {
    EXPECT_EQ(f.status, RequestStatus::kFinishedLength);
    EXPECT_EQ(f.n_generated, max_tokens[f.id]);
    EXPECT_EQ(e.outputs[f.id], expected_outputs(f.id, max_tokens[f.id])) << "request " << f.id;
  }
  EXPECT_EQ(e.finished.size() + cancelled.size(), n_requests);
  EXPECT_EQ(e.n_bad_reads, 0);
  EXPECT_GT(s.counters().preemptions, 0u);
  if (prefix_caching) {
    EXPECT_GT(s.counters().prefix_hit_tokens, 0u);
  }
  EXPECT_EQ(s.kv().pool().n_free(), 24);
}

TEST(Scheduler, RandomSoakWithPrefixCache) {
  for (uint32_t seed = 1; seed <= 8; ++seed) {
    SCOPED_TRACE(seed);
    ASSERT_NO_FATAL_FAILURE(soak(seed, true));
  }
}

TEST(Scheduler, RandomSoakWithoutPrefixCache) {
  for (uint32_t seed = 11; seed <= 14; ++seed) {
    SCOPED_TRACE(seed);
    ASSERT_NO_FATAL_FAILURE(soak(seed, false));
  }
}

}  // namespace
}  // namespace cai
