// ThreadPool implementation: a generation counter publishes each job, an atomic cursor hands out chunks, and both
// sides spin for a short while before falling back to condition variables.
#include "core/thread_pool.h"

#include <algorithm>
#include <chrono>

#if defined(__x86_64__)
#include <immintrin.h>
#endif

namespace cai {

namespace {

// Chunks per thread: enough for a fast thread to take over a slow one's share, few enough to keep overhead small.
constexpr int64_t kChunksPerThread = 4;
// How long an idle thread polls before sleeping: longer than the gap between two ops, far shorter than a request.
constexpr auto kSpinFor = std::chrono::microseconds(200);

void cpu_relax() {
#if defined(__x86_64__)
  _mm_pause();
#endif
}

// Polls `ready` for up to kSpinFor; true when it became true. Yields now and then so that, with more threads than
// cores, the thread being waited for gets to run.
template <class Pred>
bool spin_until(Pred ready) {
  const auto deadline = std::chrono::steady_clock::now() + kSpinFor;
  for (int i = 0;; ++i) {
    if (ready()) return true;
    cpu_relax();
    if ((i & 31) == 31) {
      if (std::chrono::steady_clock::now() > deadline) return false;
      std::this_thread::yield();
    }
  }
}

}  // namespace

ThreadPool::ThreadPool(int n_threads) {
  if (n_threads <= 0) n_threads = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  n_threads_ = n_threads;
  for (int i = 1; i < n_threads_; ++i) threads_.emplace_back([this] { worker(); });
}

ThreadPool::~ThreadPool() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stop_.store(true);
  }
  work_cv_.notify_all();
  for (auto& t : threads_) t.join();
}

void ThreadPool::parallel_for(int64_t n, int64_t grain, const std::function<void(int64_t, int64_t)>& fn) {
  if (n <= 0) return;
  grain = std::max<int64_t>(1, grain);
  const int64_t chunk = std::max(grain, (n + n_threads_ * kChunksPerThread - 1) / (n_threads_ * kChunksPerThread));
  if (n_threads_ == 1 || chunk >= n) {
    fn(0, n);
    return;
  }
  job_ = &fn;
  job_n_ = n;
  job_chunk_ = chunk;
  next_chunk_.store(0, std::memory_order_relaxed);
  pending_.store(n_threads_ - 1, std::memory_order_relaxed);
  {
    std::lock_guard<std::mutex> lock(mu_);  // a worker between its last poll and its wait sees this under the lock
    generation_.fetch_add(1, std::memory_order_release);
  }
  work_cv_.notify_all();
  run_chunks();
  auto done = [this] { return pending_.load(std::memory_order_acquire) == 0; };
  if (!spin_until(done)) {
    std::unique_lock<std::mutex> lock(mu_);
    done_cv_.wait(lock, done);
  }
  job_ = nullptr;
}

void ThreadPool::run_chunks() {
  for (;;) {
    const int64_t begin = next_chunk_.fetch_add(1, std::memory_order_relaxed) * job_chunk_;
    if (begin >= job_n_) return;
    (*job_)(begin, std::min(job_n_, begin + job_chunk_));
  }
}

bool ThreadPool::wait_for_job(uint64_t seen) {
  auto ready = [&] { return stop_.load() || generation_.load(std::memory_order_acquire) != seen; };
  if (!spin_until(ready)) {
    std::unique_lock<std::mutex> lock(mu_);
    work_cv_.wait(lock, ready);
  }
  return !stop_.load();
}

void ThreadPool::worker() {
  uint64_t seen = 0;
  while (wait_for_job(seen)) {
    seen = generation_.load(std::memory_order_acquire);
    run_chunks();
    if (pending_.fetch_sub(1, std::memory_order_acq_rel) == 1) {
      std::lock_guard<std::mutex> lock(mu_);  // pairs with the caller's predicate check under the same lock
      done_cv_.notify_one();
    }
  }
}

}  // namespace cai
