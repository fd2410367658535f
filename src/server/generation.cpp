// One submitted request: engine events queued for the HTTP thread, latency metrics, cancellation.
#include "server/generation.h"

#include <algorithm>

namespace cai::server {

void EventChannel::push(const StreamEvent& ev) {
  {
    std::lock_guard lock(mu_);
    events_.push_back(ev);
  }
  cv_.notify_one();
}

std::vector<StreamEvent> EventChannel::wait(std::chrono::milliseconds timeout) {
  std::unique_lock lock(mu_);
  cv_.wait_for(lock, timeout, [&] { return !events_.empty(); });
  std::vector<StreamEvent> out(std::make_move_iterator(events_.begin()), std::make_move_iterator(events_.end()));
  events_.clear();
  return out;
}

Result<std::shared_ptr<Generation>> Generation::submit(Engine& engine, ServerMetrics& metrics,
                                                       GenerationRequest request, Clock::time_point arrival) {
  std::shared_ptr<Generation> gen(new Generation(engine, metrics, arrival, request.n));
  // The callback holds the channel, not the Generation: events after the HTTP side is gone are simply dropped.
  std::shared_ptr<EventChannel> channel = gen->channel_;
  CAI_ASSIGN_OR_RETURN(gen->id_,
                       engine.submit(std::move(request), [channel](const StreamEvent& ev) { channel->push(ev); }));
  return gen;
}

Generation::~Generation() { cancel(); }

void Generation::cancel() {
  if (finished() || cancelled_) return;
  cancelled_ = true;
  engine_.cancel(id_);
}

std::vector<StreamEvent> Generation::next(std::chrono::milliseconds timeout) {
  std::vector<StreamEvent> events = channel_->wait(timeout);
  const Clock::time_point now = Clock::now();
  for (const StreamEvent& ev : events) account(ev, now);
  return events;
}

Usage Generation::usage() const {
  Usage u;
  u.prompt_tokens = prompt_tokens_;
  u.cached_tokens = cached_tokens_;
  for (int n : generated_) u.completion_tokens += n;
  for (const auto& [drafted, accepted] : drafts_) u.draft_tokens += drafted, u.accepted_tokens += accepted;
  return u;
}

void Generation::account(const StreamEvent& ev, Clock::time_point now) {
  if (ev.index < 0 || static_cast<size_t>(ev.index) >= generated_.size()) return;
  if (ev.n_prompt_tokens > 0) prompt_tokens_ = ev.n_prompt_tokens;
  if (ev.index == 0) cached_tokens_ = ev.n_cached_prompt_tokens;
  drafts_[static_cast<size_t>(ev.index)] = {ev.n_draft_tokens, ev.n_accepted_tokens};
  int& generated = generated_[static_cast<size_t>(ev.index)];
  const int n_new = std::max(0, ev.n_generated_tokens - generated);
  generated = std::max(generated, ev.n_generated_tokens);
  if (n_new > 0) {
    if (n_generated_seen_ == 0) {
      metrics_.observe_ttft(std::chrono::duration<double>(now - arrival_).count());
      if (n_new > 1) metrics_.observe_tpot(0.0, n_new - 1);  // several tokens arrived in one event
    } else {
      metrics_.observe_tpot(std::chrono::duration<double>(now - last_token_time_).count() / n_new, n_new);
    }
    last_token_time_ = now;
    n_generated_seen_ += n_new;
  }
  if (ev.finish != FinishReason::kNone && ++n_finished_ == static_cast<int>(generated_.size()))
    metrics_.observe_e2e(std::chrono::duration<double>(now - arrival_).count());
}

}  // namespace cai::server
