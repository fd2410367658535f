// FakeEngine: a scripted Engine for server tests (emits given text pieces from its own thread, for each of a request's
// n choices, records cancels).
#pragma once

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <map>
#include <mutex>
#include <thread>

#include "cai/engine.h"
#include "model/loaders/gguf.h"
#include "test_paths.h"

namespace cai::test {

class FakeEngine : public Engine {
 public:
  // What the next submits do.
  struct Script {
    std::vector<std::string> pieces = {"Once", " upon", " a", " time"};  // one event per piece (one token each)
    FinishReason finish = FinishReason::kStop;
    std::string error;                              // with finish == kError
    StatusCode error_code = StatusCode::kInternal;  // with finish == kError
    bool hold = false;                              // emit nothing until cancelled
    Status submit_status;                           // non-OK: submit() fails with it
    std::chrono::milliseconds delay{0};             // between events
    int n_cached = 0;
    int max_active = 0;  // > 0: submit fails (queue full) while this many are unfinished
  };

  explicit FakeEngine(int ctx_size = 64) : ctx_size_(ctx_size) {
    auto gguf = GgufFile::open(data_path("models/TinyStories-656K-Q8_0.gguf"));
    EXPECT_TRUE(gguf.ok()) << gguf.status().to_string();
    auto tok = Tokenizer::from_gguf_metadata(gguf.value()->metadata());
    EXPECT_TRUE(tok.ok()) << tok.status().to_string();
    model_.tokenizer = std::move(tok).value();
    model_.source = "fake";
  }
  ~FakeEngine() override { shutdown(); }

  Script script;

  Result<uint64_t> submit(GenerationRequest request, EventCallback on_event) override {
    if (!script.submit_status.ok()) return script.submit_status;
    std::lock_guard lock(mu_);
    if (shut_) return unavailable("shutting down");
    if (script.max_active > 0 && n_active_ >= script.max_active) return resource_exhausted("waiting queue full");
    const uint64_t id = ++next_id_;
    requests_.push_back(request);
    cancel_flags_[id] = std::make_shared<std::atomic<bool>>(false);
    ++n_active_;
    threads_.emplace_back([this, id, request = std::move(request), s = script, flag = cancel_flags_[id],
                           cb = std::move(on_event)]() mutable {
      emit(id, std::move(request), std::move(s), std::move(flag), std::move(cb));
      std::lock_guard lock(mu_);
      --n_active_;
    });
    return id;
  }
  void cancel(uint64_t id) override {
    std::lock_guard lock(mu_);
    cancelled_.push_back(id);
    if (auto it = cancel_flags_.find(id); it != cancel_flags_.end()) it->second->store(true);
    cv_.notify_all();
  }
  EngineStats stats() const override {
    EngineStats s;
    s.n_running = 2;
    s.n_waiting = 1;
    s.kv_blocks_total = 40;
    s.kv_blocks_used = 10;
    s.kv_dtype = "bf16";
    s.kv_bytes_per_token = 73728;
    s.prompt_tokens = 123;
    s.prefix_hit_tokens = 45;
    s.generated_tokens = 67;
    s.preemptions = 3;
    return s;
  }
  const LoadedModel& model() const override { return model_; }
  int ctx_size() const override { return ctx_size_; }
  void shutdown() override {
    std::vector<std::thread> threads;
    {
      std::lock_guard lock(mu_);
      shut_ = true;
      for (auto& [id, flag] : cancel_flags_) flag->store(true);
      threads.swap(threads_);
    }
    cv_.notify_all();
    for (std::thread& t : threads) t.join();
  }

  std::vector<GenerationRequest> requests() {
    std::lock_guard lock(mu_);
    return requests_;
  }
  std::vector<uint64_t> cancelled() {
    std::lock_guard lock(mu_);
    return cancelled_;
  }
  // Waits until some request was cancelled.
  bool wait_cancelled(std::chrono::milliseconds timeout) {
    std::unique_lock lock(mu_);
    return cv_.wait_for(lock, timeout, [&] { return !cancelled_.empty(); });
  }

 private:
  void emit(uint64_t, GenerationRequest req, Script s, std::shared_ptr<std::atomic<bool>> cancelled, EventCallback cb) {
    StreamEvent ev;
    ev.n_prompt_tokens = static_cast<int>(req.prompt.size());
    ev.n_cached_prompt_tokens = s.n_cached;
    if (s.hold) {
      std::unique_lock lock(mu_);
      cv_.wait(lock, [&] { return cancelled->load(); });
    }
    for (size_t i = 0; i < s.pieces.size() && !cancelled->load(); ++i) {
      if (s.delay.count() > 0) std::this_thread::sleep_for(s.delay);
      ev.text = s.pieces[i];
      ev.n_generated_tokens = static_cast<int>(i + 1);
      ev.logprobs.clear();
      if (req.top_logprobs >= 0) {
        TokenLogprob lp{static_cast<int32_t>(i), s.pieces[i], -0.5f, {}};
        for (int k = 0; k < req.top_logprobs; ++k) lp.top.emplace_back(k == 0 ? s.pieces[i] : "alt", -0.5f - k);
        ev.logprobs.push_back(lp);
      }
      const bool last = i + 1 == s.pieces.size();
      ev.finish = last ? s.finish : FinishReason::kNone;
      if (last) ev.error = s.error, ev.error_code = s.error_code;
      for (ev.index = 0; ev.index < req.n; ++ev.index) cb(ev);
      if (last) return;
    }
    ev.text.clear();
    ev.logprobs.clear();
    ev.finish = FinishReason::kCancelled;
    for (ev.index = 0; ev.index < req.n; ++ev.index) cb(ev);
  }

  LoadedModel model_;
  int ctx_size_;
  std::mutex mu_;
  std::condition_variable cv_;
  bool shut_ = false;
  int n_active_ = 0;  // submitted requests whose last event is not yet out
  uint64_t next_id_ = 0;
  std::vector<GenerationRequest> requests_;
  std::vector<uint64_t> cancelled_;
  std::map<uint64_t, std::shared_ptr<std::atomic<bool>>> cancel_flags_;
  std::vector<std::thread> threads_;
};

}  // namespace cai::test
