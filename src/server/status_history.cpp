// StatusHistory: the sampling thread and its window of samples.
#include "server/status_history.h"

#include <chrono>

namespace cai::server {

StatusHistory::StatusHistory(Sampler sample, double period_s, double window_s)
    : sample_(std::move(sample)), period_s_(period_s), window_s_(window_s), thread_([this] { run(); }) {}

StatusHistory::~StatusHistory() {
  {
    std::lock_guard lock(mu_);
    stopping_ = true;
  }
  wake_.notify_all();
  thread_.join();
}

std::vector<StatusSample> StatusHistory::samples() const {
  std::lock_guard lock(mu_);
  return {samples_.begin(), samples_.end()};
}

void StatusHistory::run() {
  const auto period =
      std::chrono::duration_cast<std::chrono::steady_clock::duration>(std::chrono::duration<double>(period_s_));
  auto next = std::chrono::steady_clock::now();
  std::unique_lock lock(mu_);
  while (!stopping_) {
    lock.unlock();
    StatusSample s = sample_();  // reads the engine and the devices: outside the lock
    lock.lock();
    while (!samples_.empty() && samples_.front().t < s.t - window_s_) samples_.pop_front();
    samples_.push_back(std::move(s));
    next += period;
    wake_.wait_until(lock, next, [this] { return stopping_; });
  }
}

}  // namespace cai::server
