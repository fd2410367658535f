// ThreadPool: every index is run exactly once for any n / grain / thread count, back-to-back jobs (the spinning
// hand-off) and jobs after an idle pause (the sleeping hand-off) both complete, and chunks respect the grain.
#include "core/thread_pool.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <mutex>
#include <thread>
#include <vector>

namespace cai {
namespace {

void expect_each_index_once(ThreadPool& pool, int64_t n, int64_t grain) {
  std::vector<std::atomic<int>> hits(static_cast<size_t>(n));
  std::atomic<int64_t> smallest_chunk{n};
  std::atomic<int64_t> chunks{0};
  pool.parallel_for(n, grain, [&](int64_t b, int64_t e) {
    ASSERT_LT(b, e);
    chunks.fetch_add(1);
    int64_t len = e - b, cur = smallest_chunk.load();
    while (len < cur && !smallest_chunk.compare_exchange_weak(cur, len)) {}
    for (int64_t i = b; i < e; ++i) hits[static_cast<size_t>(i)].fetch_add(1);
  });
  for (int64_t i = 0; i < n; ++i) ASSERT_EQ(hits[static_cast<size_t>(i)].load(), 1) << "index " << i << " of " << n;
  if (chunks.load() > 1) {
    EXPECT_GE(smallest_chunk.load() + (n % grain == 0 ? 0 : grain), grain);  // only the last chunk may be short
  }
}

TEST(ThreadPool, EveryIndexExactlyOnce) {
  for (int threads : {1, 2, 3, 8}) {
    ThreadPool pool(threads);
    EXPECT_EQ(pool.size(), threads);
    for (int64_t n : {1, 2, 7, 64, 1000, 4097})
      for (int64_t grain : {1, 3, 16, 5000}) expect_each_index_once(pool, n, grain);
  }
}

TEST(ThreadPool, ManyBackToBackJobsAndJobsAfterSleeping) {
  ThreadPool pool(3);
  std::atomic<int64_t> sum{0};
  for (int rep = 0; rep < 20000; ++rep) pool.parallel_for(10, 1, [&](int64_t b, int64_t e) { sum.fetch_add(e - b); });
  EXPECT_EQ(sum.load(), 200000);
  for (int rep = 0; rep < 3; ++rep) {  // idle long enough for the workers to fall asleep
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
    expect_each_index_once(pool, 100, 1);
  }
}

TEST(ThreadPool, WorkIsSharedBetweenThreads) {
  ThreadPool pool(2);
  std::mutex mu;
  std::vector<std::thread::id> ids;
  for (int rep = 0; rep < 200 && ids.size() < 2; ++rep) {
    pool.parallel_for(8, 1, [&](int64_t, int64_t) {
      std::this_thread::sleep_for(std::chrono::microseconds(500));  // long enough for the worker to join
      std::lock_guard<std::mutex> lock(mu);
      if (std::find(ids.begin(), ids.end(), std::this_thread::get_id()) == ids.end())
        ids.push_back(std::this_thread::get_id());
    });
  }
  EXPECT_EQ(ids.size(), 2u);
}

}  // namespace
}  // namespace cai
