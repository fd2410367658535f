// ThreadPool: persistent workers running parallel_for over index ranges (the CPU backend's executor).
// Chunks are handed out dynamically (a slow or descheduled core takes fewer), and idle workers spin briefly before
// sleeping, so the back-to-back ops of one forward pass do not pay a futex wake-up each.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

namespace cai {

class ThreadPool {
 public:
  explicit ThreadPool(int n_threads);  // n_threads <= 0: hardware concurrency
  ~ThreadPool();
  ThreadPool(const ThreadPool&) = delete;
  ThreadPool& operator=(const ThreadPool&) = delete;

  int size() const { return n_threads_; }

  // Split [0, n) into contiguous chunks of at least `grain` items and run fn(begin, end) on them from every thread
  // (the caller's thread included). Which thread runs which chunk varies; blocks until all are done. Not re-entrant.
  void parallel_for(int64_t n, int64_t grain, const std::function<void(int64_t, int64_t)>& fn);

 private:
  void worker();
  void run_chunks();
  bool wait_for_job(uint64_t seen);  // false: stop

  int n_threads_;
  std::vector<std::thread> threads_;
  std::mutex mu_;
  std::condition_variable work_cv_;
  std::condition_variable done_cv_;
  // The job, published by the release increment of generation_.
  const std::function<void(int64_t, int64_t)>* job_ = nullptr;
  int64_t job_n_ = 0;
  int64_t job_chunk_ = 0;
  std::atomic<int64_t> next_chunk_{0};
  std::atomic<uint64_t> generation_{0};
  std::atomic<int> pending_{0};  // workers that have not finished the current generation
  std::atomic<bool> stop_{false};
};

}  // namespace cai
