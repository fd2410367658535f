// Scheduler with speculative drafts: a draft rides on its request's decode step within the budget, max_tokens and
// free blocks; accepted tokens advance the request, rejected positions are dropped and never reach the prefix cache.
#include <gtest/gtest.h>

#include "runtime/sched/scheduler.h"
#include "runtime_test_util.h"
#include "scheduler_test_util.h"

namespace cai {
namespace {

using test::Ids;
using test::iota_tokens;
using test::make_scheduler;

// Runs the prompt step of request 1 (prompt 0..n-1) and samples `first`.
void prefill(Scheduler& s, int n_prompt, int max_tokens, int32_t first) {
  ASSERT_TRUE(s.add(1, iota_tokens(n_prompt), max_tokens).ok());
  ASSERT_TRUE(s.set_draft(1, {7, 8}).ok());  // ignored: the request is still computing its prompt
  SchedulerOutput out = s.schedule();
  ASSERT_EQ(out.requests.size(), 1u);
  EXPECT_EQ(out.requests[0].n_draft, 0);
  EXPECT_EQ(out.requests[0].n_new, n_prompt);
  const SampledToken t{1, first, false};
  ASSERT_TRUE(s.update(out, std::span(&t, 1)).ok());
}

TEST(SchedulerSpec, AcceptedDraftTokensAdvanceTheRequest) {
  Scheduler s = make_scheduler(4, 512, 4, 20);
  prefill(s, 6, 20, 100);
  ASSERT_TRUE(s.set_draft(1, {101, 102, 103}).ok());
  SchedulerOutput out = s.schedule();
  ASSERT_EQ(out.requests.size(), 1u);
  const ScheduledRequest& r = out.requests[0];
  EXPECT_EQ(r.start, 6);
  EXPECT_EQ(r.n_new, 4);
  EXPECT_EQ(r.n_draft, 3);
  EXPECT_EQ(r.tokens, (Ids{100, 101, 102, 103}));
  EXPECT_GE(static_cast<int>(r.block_table.size()) * 4, 10);
  // Two drafts accepted, then a token of the model's own instead of the third.
  const SampledToken t{1, 55, false, {101, 102}};
  ASSERT_TRUE(s.update(out, std::span(&t, 1)).ok());
  const SchedRequest* q = s.request(1);
  EXPECT_EQ(q->n_computed, 9);  // 100, 101, 102 are in the cache; 103's slot is dropped
  EXPECT_EQ(q->n_generated(), 4);
  EXPECT_EQ(Ids(q->tokens.end() - 4, q->tokens.end()), (Ids{100, 101, 102, 55}));
  EXPECT_TRUE(q->draft.empty());
  EXPECT_EQ(s.counters().draft_tokens, 3u);
  EXPECT_EQ(s.counters().accepted_tokens, 2u);
  EXPECT_EQ(s.counters().verify_steps, 1u);
  // The next step starts at the first rejected position.
  SchedulerOutput next = s.schedule();
  EXPECT_EQ(next.requests[0].start, 9);
  EXPECT_EQ(next.requests[0].tokens, Ids{55});
}

TEST(SchedulerSpec, DraftsStayWithinMaxTokensAndBudget) {
  Scheduler s = make_scheduler(4, 512, 4, 20);
  prefill(s, 6, 3, 100);  // 1 of 3 tokens generated: one more can come from a draft, then the sampled one
  ASSERT_TRUE(s.set_draft(1, {101, 102, 103}).ok());
  SchedulerOutput out = s.schedule();
  EXPECT_EQ(out.requests[0].n_draft, 1);
  const SampledToken t{1, 7, false, {101}};
  Result<std::vector<FinishedRequest>> done = s.update(out, std::span(&t, 1));
  ASSERT_TRUE(done.ok());
  ASSERT_EQ(done->size(), 1u);
  EXPECT_EQ((*done)[0].status, RequestStatus::kFinishedLength);
  EXPECT_EQ((*done)[0].n_generated, 3);

  Scheduler b = make_scheduler(4, 3, 4, 20);  // a 3-token budget: the last token and two drafts
  ASSERT_TRUE(b.add(1, iota_tokens(2), 20).ok());
  SchedulerOutput o1 = b.schedule();
  const SampledToken t1{1, 9, false};
  ASSERT_TRUE(b.update(o1, std::span(&t1, 1)).ok());
  ASSERT_TRUE(b.set_draft(1, {1, 2, 3, 4}).ok());
  EXPECT_EQ(b.schedule().requests[0].n_draft, 2);
}

TEST(SchedulerSpec, ADraftNeverPreemptsAndRejectedBlocksAreNotCached) {
  Scheduler s = make_scheduler(4, 512, 4, 3);  // 12 positions
  prefill(s, 7, 5, 100);                       // blocks 0, 1 hold positions 0..7
  ASSERT_TRUE(s.set_draft(1, {1, 2, 3, 4, 5, 6}).ok());
  SchedulerOutput out = s.schedule();
  EXPECT_EQ(out.requests[0].n_draft, 3);  // max_tokens leaves room for 3 drafts, and the third block holds them
  EXPECT_TRUE(out.preempted.empty());
  const SampledToken none{1, 50, false};  // every draft rejected
  ASSERT_TRUE(s.update(out, std::span(&none, 1)).ok());
  EXPECT_EQ(s.request(1)->n_computed, 8);
  // Only the first two blocks are full of accepted tokens: a new request with the same 9 tokens reuses 8 of them.
  ASSERT_TRUE(s.finish(1, RequestStatus::kFinishedStop).ok());
  Ids same = iota_tokens(7);
  same.insert(same.end(), {100, 1});
  ASSERT_TRUE(s.add(2, same, 1).ok());
  SchedulerOutput o2 = s.schedule();
  EXPECT_EQ(o2.requests[0].start, 8);
  EXPECT_EQ(o2.requests[0].tokens, Ids{1});
}

TEST(SchedulerSpec, RejectsAcceptedTokensThatAreNotTheDraft) {
  Scheduler s = make_scheduler(4, 512, 4, 20);
  prefill(s, 6, 20, 100);
  ASSERT_TRUE(s.set_draft(1, {101, 102}).ok());
  SchedulerOutput out = s.schedule();
  const SampledToken wrong{1, 5, false, {101, 999}};
  EXPECT_EQ(s.update(out, std::span(&wrong, 1)).status().code(), StatusCode::kInternal);
  const SampledToken too_many{1, 5, false, {101, 102, 103}};
  EXPECT_EQ(s.update(out, std::span(&too_many, 1)).status().code(), StatusCode::kInternal);
  EXPECT_EQ(s.request(1)->n_computed, 6);  // nothing changed
  EXPECT_EQ(s.set_draft(42, {1}).code(), StatusCode::kNotFound);
  EXPECT_TRUE(s.reserve(1, 16));
  EXPECT_FALSE(s.reserve(1, 1000));
  EXPECT_FALSE(s.reserve(42, 4));
}

}  // namespace
}  // namespace cai
