// A device whose temperature a test scripts: it runs everything on another device (the CPU) and answers each
// telemetry() call with the next scripted reading, waiting for the test to supply one. Because the engine blocks in
// that call, a test knows exactly which reading the engine acted on when it reads EngineStats.
#pragma once

#include <condition_variable>
#include <deque>
#include <mutex>
#include <string>

#include "hal/hal.h"

namespace cai::test {

class ScriptedTelemetryDevice final : public hal::Device {
 public:
  explicit ScriptedTelemetryDevice(hal::Device& inner) : inner_(inner) {}

  // The reading the next telemetry() call returns.
  void push(float celsius) {
    std::lock_guard lock(mu_);
    script_.push_back(celsius);
    cv_.notify_all();
  }
  // Blocks until `n` telemetry() calls have started (the n-th is then waiting for its reading, or got one).
  void wait_for_reads(int n) {
    std::unique_lock lock(mu_);
    cv_.wait(lock, [&] { return reads_ >= n; });
  }
  int reads() const {
    std::lock_guard lock(mu_);
    return reads_;
  }
  // From now on telemetry() answers at once, with no temperature (lets the engine run to its end).
  void close() {
    std::lock_guard lock(mu_);
    closed_ = true;
    cv_.notify_all();
  }

  hal::Telemetry telemetry() const override {
    std::unique_lock lock(mu_);
    ++reads_;
    cv_.notify_all();
    cv_.wait(lock, [&] { return closed_ || !script_.empty(); });
    hal::Telemetry t;
    if (!script_.empty()) {
      t.temperature_c = script_.front();
      script_.pop_front();
    }
    return t;
  }
  std::string telemetry_sensor() const override { return "scripted"; }

  std::string name() const override { return "scripted:0"; }
  std::string description() const override { return "scripted telemetry over " + inner_.name(); }
  hal::MemoryInfo memory_info() const override { return inner_.memory_info(); }
  const hal::OpTable& ops() const override { return inner_.ops(); }
  hal::Stream& default_stream() override { return inner_.default_stream(); }
  hal::OpContext op_context() override { return inner_.op_context(); }
  bool host_visible() const override { return inner_.host_visible(); }
  Result<hal::Buffer> allocate(size_t n_bytes, hal::MemoryKind kind) override { return inner_.allocate(n_bytes, kind); }
  void free(void* ptr, hal::MemoryKind kind) override { inner_.free(ptr, kind); }
  void set_batch_invariant(bool on) override { inner_.set_batch_invariant(on); }
  void set_precision(hal::Precision p) override { inner_.set_precision(p); }
  bool supports(hal::OpId op, DType weight_dtype) const override { return inner_.supports(op, weight_dtype); }
  bool supports_kv_dtype(DType t) const override { return inner_.supports_kv_dtype(t); }

 private:
  hal::Device& inner_;
  mutable std::mutex mu_;
  mutable std::condition_variable cv_;
  mutable std::deque<float> script_;
  mutable int reads_ = 0;
  bool closed_ = false;
};

}  // namespace cai::test
