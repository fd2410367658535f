// Phase profiling: wall time per named phase (attention, moe_gate, experts, ...), on when enabled, ~free when off.
#pragma once

#include <chrono>
#include <functional>
#include <map>
#include <string>

namespace cai::profile {

void set_enabled(bool on);
bool enabled();
void reset();
// Seconds spent per phase since the last reset().
std::map<std::string, double> snapshot();
void add(const char* phase, double seconds);
// Work a device queues runs after the host has moved on, so a host clock puts it in whichever later phase waits for
// it. While profiling such a device, `fence` (its queue's synchronize) runs at every phase boundary and the work lands
// in the phase that queued it; empty (the default) for the CPU, whose ops finish before they return.
void set_fence(std::function<void()> fence);
void run_fence();

// Times its own lifetime under `phase` (a string literal). Phases should not nest.
class Scope {
 public:
  explicit Scope(const char* phase) : phase_(enabled() ? phase : nullptr) {
    if (!phase_) return;
    run_fence();
    t0_ = std::chrono::steady_clock::now();
  }
  ~Scope() {
    if (!phase_) return;
    run_fence();
    add(phase_, std::chrono::duration<double>(std::chrono::steady_clock::now() - t0_).count());
  }
  Scope(const Scope&) = delete;
  Scope& operator=(const Scope&) = delete;

 private:
  const char* phase_;
  std::chrono::steady_clock::time_point t0_;
};

}  // namespace cai::profile
