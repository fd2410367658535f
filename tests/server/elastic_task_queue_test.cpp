// ElasticTaskQueue: a thread per task up to the cap (tasks past it wait), idle threads retire, shutdown runs the rest.
#include "server/http/elastic_task_queue.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <mutex>
#include <thread>

namespace cai::server {
namespace {

using namespace std::chrono_literals;

// Tasks that block until released, counting how many run at once.
struct Gate {
  std::mutex mu;
  std::condition_variable cv;
  bool open = false;
  std::atomic<int> running{0}, most{0}, done{0};
  std::function<void()> task() {
    return [this] {
      const int now = ++running;
      for (int m = most.load(); now > m && !most.compare_exchange_weak(m, now);) {}
      std::unique_lock lock(mu);
      cv.wait(lock, [&] { return open; });
      --running;
      ++done;
    };
  }
  void release() {
    {
      std::lock_guard lock(mu);
      open = true;
    }
    cv.notify_all();
  }
  bool wait_running(int n) {
    for (int i = 0; i < 500 && running.load() < n; ++i) std::this_thread::sleep_for(10ms);
    return running.load() >= n;
  }
};

TEST(ElasticTaskQueue, EveryTaskGetsAThreadUpToTheCap) {
  ElasticTaskQueue q(/*max_threads=*/40, 10s);
  Gate gate;
  for (int i = 0; i < 50; ++i) q.enqueue(gate.task());
  EXPECT_TRUE(gate.wait_running(40));
  std::this_thread::sleep_for(50ms);
  EXPECT_EQ(gate.most.load(), 40);  // the cap holds; the other 10 wait
  EXPECT_EQ(q.n_threads(), 40u);
  gate.release();
  q.shutdown();
  EXPECT_EQ(gate.done.load(), 50);
}

TEST(ElasticTaskQueue, IdleThreadsRetireAndComeBack) {
  ElasticTaskQueue q(8, 100ms);
  Gate gate;
  for (int i = 0; i < 8; ++i) q.enqueue(gate.task());
  EXPECT_TRUE(gate.wait_running(8));
  gate.release();
  for (int i = 0; i < 100 && q.n_threads() > 0; ++i) std::this_thread::sleep_for(10ms);
  EXPECT_EQ(q.n_threads(), 0u);
  std::atomic<bool> ran{false};
  q.enqueue([&] { ran = true; });
  q.shutdown();
  EXPECT_TRUE(ran.load());
}

}  // namespace
}  // namespace cai::server
