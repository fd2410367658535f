// The watchdog's thread: polls the watched operations every few milliseconds while there are any.
#include "hal/collective_watchdog.h"

#include <chrono>
#include <condition_variable>
#include <map>
#include <mutex>
#include <thread>

#include "core/log.h"

namespace cai::hal {

namespace {

struct Watched {
  const void* owner;
  std::function<std::string()> what;
  std::chrono::steady_clock::time_point deadline;
  double timeout_s;
  std::function<void(const std::string&)> abort;
  std::function<bool()> done;  // set once the call returned
};

// Never destroyed: the thread may outlive static destructors at exit.
struct State {
  std::mutex mu;
  std::condition_variable cv;
  std::map<uint64_t, Watched> watched;
  uint64_t next_id = 1, n_aborted = 0;
  bool started = false;
};

State& state() {
  static auto* s = new State();
  return *s;
}

constexpr auto kPoll = std::chrono::milliseconds(5);

}  // namespace

CollectiveWatchdog& CollectiveWatchdog::global() {
  static auto* w = new CollectiveWatchdog();
  return *w;
}

uint64_t CollectiveWatchdog::arm(const void* owner, std::function<std::string()> what, double timeout_s,
                                 std::function<void(const std::string&)> abort) {
  State& s = state();
  std::lock_guard<std::mutex> lock(s.mu);
  const uint64_t id = s.next_id++;
  const auto deadline = std::chrono::steady_clock::now() +
                        std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::duration<double>(timeout_s));
  s.watched[id] = {owner, std::move(what), deadline, timeout_s, std::move(abort), nullptr};
  if (!s.started) {
    s.started = true;
    std::thread([this] { run(); }).detach();
  }
  s.cv.notify_one();
  return id;
}

void CollectiveWatchdog::queued(uint64_t id, std::function<bool()> done) {
  State& s = state();
  std::lock_guard<std::mutex> lock(s.mu);
  if (auto it = s.watched.find(id); it != s.watched.end()) it->second.done = std::move(done);
}

void CollectiveWatchdog::disarm(uint64_t id) {
  State& s = state();
  std::lock_guard<std::mutex> lock(s.mu);
  s.watched.erase(id);
}

void CollectiveWatchdog::forget(const void* owner) {
  State& s = state();
  std::lock_guard<std::mutex> lock(s.mu);  // an abort in progress holds it
  std::erase_if(s.watched, [owner](const auto& e) { return e.second.owner == owner; });
}

uint64_t CollectiveWatchdog::n_aborted() const {
  State& s = state();
  std::lock_guard<std::mutex> lock(s.mu);
  return s.n_aborted;
}

void CollectiveWatchdog::run() {
  State& s = state();
  std::unique_lock<std::mutex> lock(s.mu);
  for (;;) {
    if (s.watched.empty()) {
      s.cv.wait(lock);
      continue;
    }
    s.cv.wait_for(lock, kPoll);
    const auto now = std::chrono::steady_clock::now();
    for (auto it = s.watched.begin(); it != s.watched.end();) {
      Watched& w = it->second;
      if (w.done && w.done()) {
        it = s.watched.erase(it);
      } else if (now >= w.deadline) {
        const std::string failure = fmt::format(
            "{} did not complete within {:g} s (a peer died or stopped); aborted it", w.what(), w.timeout_s);
        CAI_LOG_ERROR("collective watchdog: {}", failure);
        w.abort(failure);  // under the lock: forget() waits for it
        ++s.n_aborted;
        it = s.watched.erase(it);
      } else {
        ++it;
      }
    }
  }
}

}  // namespace cai::hal
