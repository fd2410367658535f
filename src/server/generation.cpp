// One submitted request: engine events queued for the HTTP thread, latency metrics, cancellation.
#include "server/generation.h"

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
  std::shared_ptr<Generation> gen(new Generation(engine, metrics, arrival));
  // The callback holds the channel, not the Generation: events after the HTTP side is gone are simply dropped.
  std::shared_ptr<EventChannel> channel = gen->channel_;
  CAI_ASSIGN_OR_RETURN(gen->id_, engine.submit(std::move(request), [channel](const StreamEvent& ev) {
    channel->push(ev);
  }));
  return gen;
}

Generation::~Generation() { cancel(); }

void Generation::cancel() {
  if (finished_ || cancelled_) return;
  cancelled_ = true;
  engine_.cancel(id_);
}

std::vector<StreamEvent> Generation::next(std::chrono::milliseconds timeout) {
  std::vector<StreamEvent> events = channel_->wait(timeout);
  const Clock::time_point now = Clock::now();
  for (const StreamEvent& ev : events) account(ev, now);
  return events;
}

void Generation::account(const StreamEvent& ev, Clock::time_point now) {
  usage_.prompt_tokens = ev.n_prompt_tokens;
  usage_.cached_tokens = ev.n_cached_prompt_tokens;
  usage_.completion_tokens = ev.n_generated_tokens;
  const int n_new = ev.n_generated_tokens - n_generated_seen_;
  if (n_new > 0) {
    if (n_generated_seen_ == 0) {
      metrics_.observe_ttft(std::chrono::duration<double>(now - arrival_).count());
      if (n_new > 1) metrics_.observe_tpot(0.0, n_new - 1);  // several tokens arrived in one event
    } else {
      metrics_.observe_tpot(std::chrono::duration<double>(now - last_token_time_).count() / n_new, n_new);
    }
    last_token_time_ = now;
    n_generated_seen_ = ev.n_generated_tokens;
  }
  if (ev.finish != FinishReason::kNone) {
    finished_ = true;
    metrics_.observe_e2e(std::chrono::duration<double>(now - arrival_).count());
  }
}

}  // namespace cai::server
