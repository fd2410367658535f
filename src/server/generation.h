// One submitted request (all its choices) as the HTTP side sees it: the event queue the engine thread fills, timing,
// usage, cancellation.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <memory>
#include <mutex>
#include <vector>

#include "cai/engine.h"
#include "server/metrics.h"
#include "server/openai/openai_response.h"

namespace cai::server {

using Clock = std::chrono::steady_clock;

// Events from the engine thread, handed to one HTTP thread. push() never blocks for long.
class EventChannel {
 public:
  void push(const StreamEvent& ev);
  // Every queued event, waiting up to `timeout` for the first; empty on timeout.
  std::vector<StreamEvent> wait(std::chrono::milliseconds timeout);

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<StreamEvent> events_;
};

class Generation {
 public:
  // Submits to `engine`; the engine's errors come back unchanged (the caller maps them to HTTP statuses).
  static Result<std::shared_ptr<Generation>> submit(Engine& engine, ServerMetrics& metrics, GenerationRequest request,
                                                    Clock::time_point arrival);
  ~Generation();

  // The next events (waiting up to `timeout`); records TTFT / time-per-token / latency metrics as they pass.
  std::vector<StreamEvent> next(std::chrono::milliseconds timeout);
  // Cancels the engine request unless it already finished (e.g. the client went away). Idempotent.
  void cancel();
  // Every choice has had its final event.
  bool finished() const { return n_finished_ == static_cast<int>(generated_.size()); }
  // The prompt counted once, the completion tokens of every choice summed.
  Usage usage() const;

 private:
  Generation(Engine& engine, ServerMetrics& metrics, Clock::time_point arrival, int n_choices)
      : engine_(engine), metrics_(metrics), arrival_(arrival), generated_(static_cast<size_t>(n_choices), 0),
        drafts_(static_cast<size_t>(n_choices)) {}
  void account(const StreamEvent& ev, Clock::time_point now);

  Engine& engine_;
  ServerMetrics& metrics_;
  std::shared_ptr<EventChannel> channel_ = std::make_shared<EventChannel>();
  uint64_t id_ = 0;
  Clock::time_point arrival_;
  Clock::time_point last_token_time_{};
  int n_generated_seen_ = 0;                 // all choices together
  std::vector<int> generated_;               // per choice: tokens generated so far
  std::vector<std::pair<int, int>> drafts_;  // per choice: draft tokens verified, accepted
  int n_finished_ = 0;                       // choices that had their final event
  bool cancelled_ = false;
  int prompt_tokens_ = 0;
  int cached_tokens_ = 0;
};

}  // namespace cai::server
