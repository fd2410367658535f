// Scheduler: continuous batching after vLLM v1 — token budget per step, no prefill/decode phases,
// admission while KV blocks last, preemption by recompute.
#pragma once

#include <cstdint>
#include <deque>
#include <span>
#include <unordered_map>
#include <vector>

#include "core/status.h"
#include "runtime/kv/kv_cache_manager.h"
#include "runtime/sched/scheduler_output.h"

namespace cai {

struct SchedulerOptions {
  int max_batch = 16;             // most sequences in one step
  int max_tokens_per_step = 512;  // token budget per step (chunked prefill falls out of it)
  int block_size = 16;            // KV positions per block
  int n_blocks = 0;               // KV blocks in the pool
  bool prefix_caching = true;
};

struct SchedRequest {
  uint64_t id = 0;
  std::vector<int32_t> tokens;  // the prompt, then every generated token
  int n_prompt = 0;
  int n_computed = 0;  // leading tokens whose KV is in the cache
  int max_tokens = 0;  // generated tokens at most
  RequestStatus status = RequestStatus::kWaiting;
  int n_cached_prompt_tokens = 0;  // prompt tokens found in the prefix cache (or shared) at first admission
  uint64_t follows = 0;            // a sibling with the same prompt whose prompt KV blocks this one shares (0: none)
  std::vector<int32_t> draft;      // speculative tokens to verify after the last one at its next decode step
  bool reuse_prefix = true;        // false: the prompt is computed whole, none of it from the prefix cache
  int n_generated() const { return int(tokens.size()) - n_prompt; }
};

struct SchedulerCounters {
  uint64_t steps = 0;  // schedule() calls that scheduled work
  uint64_t preemptions = 0;
  uint64_t prefix_hit_tokens = 0;  // tokens found in the prefix cache at admissions (not recomputed)
  uint64_t computed_tokens = 0;    // tokens scheduled for computation
  uint64_t draft_tokens = 0;       // speculative tokens scheduled for verification
  uint64_t accepted_tokens = 0;    // of those, accepted
  uint64_t verify_steps = 0;       // request-steps that verified a draft
};

// One step: out = schedule(); the engine runs out.requests and samples for those with `sample`;
// update(out, sampled). finish()/cancel() may be called between steps. Not thread-safe.
class Scheduler {
 public:
  static Result<Scheduler> create(const SchedulerOptions& options);

  // Queues a request. invalid_argument for a duplicate id, an empty prompt, max_tokens < 1, or a request
  // that could not fit in the whole KV cache even alone (it would preempt forever). With `follows` (a request queued
  // earlier with the same prompt: the other choices of an n > 1 request) it is admitted once that request's prompt is
  // computed and takes its full prompt blocks by reference instead of computing them. Without `reuse_prefix` nothing
  // is taken from the prefix cache (the caller wants the logits of every prompt position).
  Status add(uint64_t id, std::vector<int32_t> prompt, int max_tokens, uint64_t follows = 0, bool reuse_prefix = true);

  // Picks this step's work: running requests first (preempting the most recently admitted ones when
  // blocks run out), then waiting requests FIFO while budget, batch slots and blocks last.
  SchedulerOutput schedule();

  // Applies a step: advances n_computed, caches newly full blocks, appends sampled tokens and finishes
  // requests (stop or max_tokens), freeing their blocks. Requests finished or cancelled since schedule()
  // are skipped. internal_error when there is no step to update or a sampling request lacks its token
  // (then nothing changes).
  Result<std::vector<FinishedRequest>> update(const SchedulerOutput& out, std::span<const SampledToken> sampled);

  // Speculative decoding: the tokens to verify after request `id`'s last token at its next decode step. The step
  // takes as many as its token budget, the request's max_tokens and the free KV blocks leave room for (none when
  // the request is still computing its prompt); a new draft replaces the old. not_found for an unknown id.
  Status set_draft(uint64_t id, std::vector<int32_t> draft);
  // Grows a running request's block table to hold `n_positions` positions (a drafter writing its own cache ahead of
  // the request); false, changing nothing, when the pool lacks the blocks or the request is not running.
  bool reserve(uint64_t id, int n_positions);

  // Ends a waiting or running request now, freeing its blocks. `status` must be a finished one;
  // not_found for an unknown or already finished id.
  Result<FinishedRequest> finish(uint64_t id, RequestStatus status);
  Result<FinishedRequest> cancel(uint64_t id) { return finish(id, RequestStatus::kFinishedCancelled); }

  const SchedRequest* request(uint64_t id) const;                    // null once finished or for an unknown id
  const std::vector<uint64_t>& running() const { return running_; }  // admission order
  const std::deque<uint64_t>& waiting() const { return waiting_; }   // admission order next
  int n_running() const { return int(running_.size()); }
  int n_waiting() const { return int(waiting_.size()); }
  bool has_work() const { return !running_.empty() || !waiting_.empty(); }

  // Thermal hook: sets the per-step token budget, clamped to [min(max_batch, configured), configured].
  // Returns the budget now in force.
  int set_token_budget(int n_tokens);
  int token_budget() const { return token_budget_; }

  const SchedulerCounters& counters() const { return counters_; }
  const KvCacheManager& kv() const { return kv_; }
  const SchedulerOptions& options() const { return options_; }

 private:
  explicit Scheduler(const SchedulerOptions& options);

  void schedule_running(SchedulerOutput& out, int& budget);
  void schedule_waiting(SchedulerOutput& out, int& budget);
  // The blocks `r` may take at admission: the prefix cache's, or its leader's prompt blocks when longer. False while
  // the leader is still computing its prompt (r must wait).
  bool admission_prefix(const SchedRequest& r, ComputedPrefix& prefix) const;
  void emit(SchedulerOutput& out, const SchedRequest& r, int n_new, int& budget, int n_draft);
  // How many of r's draft tokens a step computing n_new of its tokens can verify within `budget`.
  int draft_room(const SchedRequest& r, int n_new, int budget) const;
  void preempt(SchedRequest& r);
  void remove(uint64_t id);

  SchedulerOptions options_;
  KvCacheManager kv_;
  int token_budget_;
  std::unordered_map<uint64_t, SchedRequest> requests_;
  std::deque<uint64_t> waiting_;
  std::vector<uint64_t> running_;
  bool step_pending_ = false;
  SchedulerCounters counters_;
};

}  // namespace cai
