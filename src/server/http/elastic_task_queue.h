// ElasticTaskQueue: httplib's task queue as one thread per connection being served, created on demand up to a cap
// and retired after a while idle — slow or long-lived connections never starve the rest of a fixed pool.
#pragma once

#include <httplib.h>

#include <chrono>
#include <condition_variable>
#include <deque>
#include <functional>
#include <list>
#include <mutex>
#include <thread>
#include <vector>

namespace cai::server {

class ElasticTaskQueue : public httplib::TaskQueue {
 public:
  // At most `max_threads` run at once (tasks past that wait their turn); idle threads exit after `idle_retire`.
  ElasticTaskQueue(size_t max_threads, std::chrono::milliseconds idle_retire);
  ~ElasticTaskQueue() override;

  void enqueue(std::function<void()> fn) override;
  // Runs what is queued, then joins every thread.
  void shutdown() override;

  size_t n_threads() const;

 private:
  void work();
  // Joins threads that have exited. Called with mu_ held.
  void reap_locked();

  const size_t max_threads_;
  const std::chrono::milliseconds idle_retire_;
  mutable std::mutex mu_;
  std::condition_variable cv_;
  std::deque<std::function<void()>> tasks_;
  std::list<std::thread> threads_;
  std::vector<std::thread::id> exited_;
  size_t n_idle_ = 0;
  bool shutting_down_ = false;
};

}  // namespace cai::server
