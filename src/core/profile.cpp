// Phase profile storage (a mutex-guarded map; phases are coarse, so contention is irrelevant).
#include "core/profile.h"

#include <atomic>
#include <mutex>

namespace cai::profile {

namespace {
std::atomic<bool> g_enabled{false};
std::mutex g_mu;
std::function<void()> g_fence;  // set between profiled passes, not during one
std::map<std::string, double>& totals() {
  static std::map<std::string, double> m;
  return m;
}
}  // namespace

void set_enabled(bool on) { g_enabled = on; }
bool enabled() { return g_enabled.load(std::memory_order_relaxed); }

void set_fence(std::function<void()> fence) { g_fence = std::move(fence); }
void run_fence() {
  if (g_fence) g_fence();
}

void reset() {
  std::lock_guard<std::mutex> lock(g_mu);
  totals().clear();
}

std::map<std::string, double> snapshot() {
  std::lock_guard<std::mutex> lock(g_mu);
  return totals();
}

void add(const char* phase, double seconds) {
  std::lock_guard<std::mutex> lock(g_mu);
  totals()[phase] += seconds;
}

}  // namespace cai::profile
