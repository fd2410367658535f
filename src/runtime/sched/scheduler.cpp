// Scheduler: admission, token budget, preemption by recompute, and step bookkeeping.
#include "runtime/sched/scheduler.h"

#include <algorithm>
#include <unordered_map>

namespace cai {

const char* request_status_name(RequestStatus s) {
  switch (s) {
    case RequestStatus::kWaiting: return "waiting";
    case RequestStatus::kRunning: return "running";
    case RequestStatus::kPreempted: return "preempted";
    case RequestStatus::kFinishedStop: return "finished (stop)";
    case RequestStatus::kFinishedLength: return "finished (length)";
    case RequestStatus::kFinishedCancelled: return "finished (cancelled)";
    case RequestStatus::kFinishedError: return "finished (error)";
  }
  return "unknown";
}

Result<Scheduler> Scheduler::create(const SchedulerOptions& o) {
  if (o.max_batch < 1) return invalid_argument("max_batch must be at least 1, got {}", o.max_batch);
  if (o.max_tokens_per_step < 1)
    return invalid_argument("max_tokens_per_step must be at least 1, got {}", o.max_tokens_per_step);
  if (o.block_size < 1) return invalid_argument("block_size must be at least 1, got {}", o.block_size);
  if (o.n_blocks < 1) return invalid_argument("the KV cache needs at least one block, got {}", o.n_blocks);
  return Scheduler(o);
}

Scheduler::Scheduler(const SchedulerOptions& options)
    : options_(options), kv_(options.n_blocks, options.block_size, options.prefix_caching),
      token_budget_(options.max_tokens_per_step) {}

Status Scheduler::add(uint64_t id, std::vector<int32_t> prompt, int max_tokens, uint64_t follows, bool reuse_prefix) {
  if (requests_.count(id)) return invalid_argument("request id {} is already queued or running", id);
  if (prompt.empty()) return invalid_argument("request {} has an empty prompt", id);
  if (max_tokens < 1) return invalid_argument("request {}: max_tokens must be at least 1, got {}", id, max_tokens);
  // The last generated token is never fed back, so prompt + max_tokens - 1 positions need KV.
  const int64_t n_positions = int64_t(prompt.size()) + max_tokens - 1;
  const int64_t n_needed = kv_.n_blocks_for(n_positions);
  if (n_positions > INT32_MAX || n_needed > kv_.pool().n_total())
    return invalid_argument(
        "request {} needs {} KV blocks ({} prompt tokens + {} max tokens, {} per block) but the whole cache "
        "has {}",
        id, n_needed, prompt.size(), max_tokens, kv_.block_size(), kv_.pool().n_total());
  SchedRequest r;
  r.id = id;
  r.n_prompt = int(prompt.size());
  r.tokens = std::move(prompt);
  r.max_tokens = max_tokens;
  r.follows = follows;
  r.reuse_prefix = reuse_prefix;
  requests_.emplace(id, std::move(r));
  waiting_.push_back(id);
  return {};
}

void Scheduler::emit(SchedulerOutput& out, const SchedRequest& r, int n_new, int& budget, int n_draft) {
  ScheduledRequest s;
  s.id = r.id;
  s.start = r.n_computed;
  s.n_new = n_new + n_draft;
  s.tokens.assign(r.tokens.begin() + s.start, r.tokens.begin() + s.start + n_new);
  s.tokens.insert(s.tokens.end(), r.draft.begin(), r.draft.begin() + n_draft);
  std::span<const int32_t> table = kv_.block_table(r.id);
  s.block_table.assign(table.begin(), table.end());
  s.sample = s.start + n_new == int(r.tokens.size());
  s.n_draft = n_draft;
  out.requests.push_back(std::move(s));
  out.n_tokens += s.n_new;
  budget -= n_new + n_draft;
  counters_.draft_tokens += uint64_t(n_draft);
  if (n_draft > 0) ++counters_.verify_steps;
}

int Scheduler::draft_room(const SchedRequest& r, int n_new, int budget) const {
  if (r.draft.empty() || n_new != 1 || r.n_computed + 1 != int(r.tokens.size())) return 0;  // not a decode step
  // Every accepted draft token is a generated one, and the step samples one more after them.
  const int room = std::min(budget - n_new, r.max_tokens - r.n_generated() - 1);
  return std::clamp(room, 0, int(r.draft.size()));
}

void Scheduler::preempt(SchedRequest& r) {
  kv_.free(r.id);
  r.n_computed = 0;
  r.draft.clear();
  r.status = RequestStatus::kPreempted;
  waiting_.push_front(r.id);
  ++counters_.preemptions;
}

void Scheduler::schedule_running(SchedulerOutput& out, int& budget) {
  for (size_t i = 0; i < running_.size() && budget > 0; ++i) {
    SchedRequest& r = requests_.at(running_[i]);
    const int n_new = std::min(int(r.tokens.size()) - r.n_computed, budget);
    CAI_CHECK(n_new > 0, "running request {} has nothing to compute", r.id);
    // A draft is verified only where its blocks are free: it never preempts anyone.
    int n_draft = draft_room(r, n_new, budget);
    if (n_draft > 0 && !kv_.allocate_slots(r.id, r.n_computed + n_new + n_draft)) n_draft = 0;
    r.draft.resize(size_t(n_draft));
    bool fits = true;
    while (!kv_.allocate_slots(r.id, r.n_computed + n_new)) {
      // Victims come from the back, beyond i: nobody already scheduled this step is preempted.
      const uint64_t victim = running_.back();
      running_.pop_back();
      preempt(requests_.at(victim));
      out.preempted.push_back(victim);
      if (victim == r.id) {
        fits = false;
        break;
      }
    }
    if (!fits) break;
    emit(out, r, n_new, budget, n_draft);
  }
}

void Scheduler::schedule_waiting(SchedulerOutput& out, int& budget) {
  while (!waiting_.empty() && budget > 0 && int(running_.size()) < options_.max_batch) {
    SchedRequest& r = requests_.at(waiting_.front());
    ComputedPrefix prefix;
    if (!admission_prefix(r, prefix)) break;  // FIFO: the head waits for its leader's prompt
    const int n_new = std::min(int(r.tokens.size()) - prefix.n_tokens, budget);
    if (!kv_.allocate_slots(r.id, prefix.n_tokens + n_new, prefix)) break;  // FIFO: nobody overtakes the head
    if (r.status == RequestStatus::kWaiting) r.n_cached_prompt_tokens = std::min(prefix.n_tokens, r.n_prompt);
    counters_.prefix_hit_tokens += uint64_t(prefix.n_tokens);
    r.n_computed = prefix.n_tokens;
    r.status = RequestStatus::kRunning;
    waiting_.pop_front();
    running_.push_back(r.id);
    emit(out, r, n_new, budget, 0);
  }
}

bool Scheduler::admission_prefix(const SchedRequest& r, ComputedPrefix& prefix) const {
  prefix = r.reuse_prefix ? kv_.get_computed_blocks(r.tokens) : ComputedPrefix{};
  const SchedRequest* lead = r.follows ? request(r.follows) : nullptr;
  if (!lead || lead->status != RequestStatus::kRunning) return true;  // the leader is gone or queued: no sharing
  if (lead->n_computed < lead->n_prompt) return false;
  // Both start with the same prompt; at least one token of r is left to compute (its logits give the next token).
  const int n_share = std::min(lead->n_prompt, int(r.tokens.size()) - 1);
  if (!std::equal(r.tokens.begin(), r.tokens.begin() + n_share, lead->tokens.begin())) return true;
  ComputedPrefix shared = kv_.shared_prefix(lead->id, n_share);
  if (shared.n_tokens > prefix.n_tokens) prefix = std::move(shared);
  return true;
}

SchedulerOutput Scheduler::schedule() {
  CAI_CHECK(!step_pending_, "schedule() called again before update() of the previous step");
  SchedulerOutput out;
  int budget = token_budget_;
  schedule_running(out, budget);
  // Blocks ran out this step: admitting new work would only be preempted again.
  if (out.preempted.empty()) schedule_waiting(out, budget);
  counters_.computed_tokens += uint64_t(out.n_tokens);
  if (!out.requests.empty()) ++counters_.steps;
  step_pending_ = true;
  return out;
}

Result<std::vector<FinishedRequest>> Scheduler::update(const SchedulerOutput& out,
                                                       std::span<const SampledToken> sampled) {
  if (!step_pending_) return internal_error("update() without a scheduled step");
  std::unordered_map<uint64_t, const SampledToken*> by_id;
  for (const SampledToken& t : sampled) by_id[t.id] = &t;
  for (const ScheduledRequest& s : out.requests) {
    auto it = requests_.find(s.id);
    if (it == requests_.end() || it->second.status != RequestStatus::kRunning) continue;
    if (s.sample != (by_id.count(s.id) > 0))
      return internal_error("request {} {} a sampled token this step", s.id, s.sample ? "needs" : "did not ask for");
    if (!s.sample) continue;
    const std::vector<int32_t>& accepted = by_id.at(s.id)->accepted;
    const auto draft = s.tokens.end() - s.n_draft;
    if (int(accepted.size()) > s.n_draft || !std::equal(accepted.begin(), accepted.end(), draft))
      return internal_error("request {}: {} accepted tokens are not a prefix of its {}-token draft", s.id,
                            accepted.size(), s.n_draft);
  }
  step_pending_ = false;
  std::vector<FinishedRequest> finished;
  for (const ScheduledRequest& s : out.requests) {
    auto it = requests_.find(s.id);
    if (it == requests_.end() || it->second.status != RequestStatus::kRunning) continue;
    SchedRequest& r = it->second;
    r.draft.clear();
    const SampledToken* t = s.sample ? by_id.at(s.id) : nullptr;
    const int n_accepted = t ? int(t->accepted.size()) : 0;
    // Rejected draft positions are dropped: their KV slots are rewritten by the next step that reaches them.
    r.n_computed = s.start + s.n_new - s.n_draft + n_accepted;
    if (t) r.tokens.insert(r.tokens.end(), t->accepted.begin(), t->accepted.end());
    kv_.cache_full_blocks(r.id, r.tokens, r.n_computed);
    counters_.accepted_tokens += uint64_t(n_accepted);
    if (!t) continue;
    r.tokens.push_back(t->token);
    RequestStatus end = RequestStatus::kRunning;
    if (t->stop)
      end = RequestStatus::kFinishedStop;
    else if (r.n_generated() >= r.max_tokens)
      end = RequestStatus::kFinishedLength;
    if (end == RequestStatus::kRunning) continue;
    finished.push_back({r.id, end, r.n_generated()});
    remove(r.id);
  }
  return finished;
}

void Scheduler::remove(uint64_t id) {
  kv_.free(id);
  std::erase(running_, id);
  std::erase(waiting_, id);
  requests_.erase(id);
}

Result<FinishedRequest> Scheduler::finish(uint64_t id, RequestStatus status) {
  if (!is_finished(status))
    return invalid_argument("finish({}) needs a finished status, got {}", id, request_status_name(status));
  auto it = requests_.find(id);
  if (it == requests_.end()) return not_found("no waiting or running request {}", id);
  FinishedRequest done{id, status, it->second.n_generated()};
  remove(id);
  return done;
}

Status Scheduler::set_draft(uint64_t id, std::vector<int32_t> draft) {
  auto it = requests_.find(id);
  if (it == requests_.end()) return not_found("no waiting or running request {}", id);
  it->second.draft = std::move(draft);
  return {};
}

bool Scheduler::reserve(uint64_t id, int n_positions) {
  const SchedRequest* r = request(id);
  return r && r->status == RequestStatus::kRunning && kv_.allocate_slots(id, n_positions);
}

const SchedRequest* Scheduler::request(uint64_t id) const {
  auto it = requests_.find(id);
  return it == requests_.end() ? nullptr : &it->second;
}

int Scheduler::set_token_budget(int n_tokens) {
  const int hi = options_.max_tokens_per_step;
  const int lo = std::min(options_.max_batch, hi);
  token_budget_ = std::clamp(n_tokens, lo, hi);
  return token_budget_;
}

}  // namespace cai
