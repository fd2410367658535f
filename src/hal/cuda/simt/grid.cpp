// Grid launches: configuration checks, and the pool of worker OS threads that share a grid's blocks.
#include <algorithm>
#include <condition_variable>
#include <mutex>
#include <thread>

#include "hal/cuda/simt/internal.h"

namespace simt::detail {
namespace {

// One grid in flight: workers take block indices from `next` until all are taken or a block failed.
struct GridRun {
  const BlockJob* job;
  uint64_t n_blocks;
  std::atomic<uint64_t> next{0};
  std::atomic<int> error{gpuSuccess};

  void work() {
    const dim3 g = job->grid;
    for (uint64_t b = next.fetch_add(1); b < n_blocks && error.load() == gpuSuccess; b = next.fetch_add(1)) {
      const uint3 idx{static_cast<unsigned>(b % g.x), static_cast<unsigned>(b / g.x % g.y),
                      static_cast<unsigned>(b / (uint64_t{g.x} * g.y))};
      const gpuError_t e = run_block(*job, idx);
      if (e != gpuSuccess) {
        int expected = gpuSuccess;
        error.compare_exchange_strong(expected, e);
      }
    }
  }
};

// Helper threads (worker_count() - 1 of them; the launching thread is the last worker). One grid at a time. The pool
// lives until the process ends, so launches from static destructors still work.
class WorkerPool {
 public:
  explicit WorkerPool(int n_helpers) : n_helpers_(n_helpers) {
    for (int i = 0; i < n_helpers; ++i) std::thread([this] { loop(); }).detach();
  }
  WorkerPool(const WorkerPool&) = delete;
  WorkerPool& operator=(const WorkerPool&) = delete;

  gpuError_t run(const BlockJob& job, uint64_t n_blocks) {
    std::lock_guard one_grid(launch_mutex_);
    GridRun grid{&job, n_blocks};
    const int helpers = static_cast<int>(std::min<uint64_t>(n_helpers_, n_blocks - 1));
    if (helpers > 0) {
      std::lock_guard lock(mutex_);
      grid_ = &grid;
      seats_ = helpers;
      busy_ = helpers;
      ++generation_;
    }
    if (helpers > 0) wake_.notify_all();
    grid.work();
    if (helpers > 0) {
      std::unique_lock lock(mutex_);
      done_.wait(lock, [this] { return busy_ == 0; });
      grid_ = nullptr;
    }
    return static_cast<gpuError_t>(grid.error.load());
  }

 private:
  void loop() {
    uint64_t seen = 0;
    std::unique_lock lock(mutex_);
    for (;;) {
      wake_.wait(lock, [&] { return generation_ != seen && seats_ > 0; });
      seen = generation_;
      --seats_;
      GridRun* grid = grid_;
      lock.unlock();
      grid->work();
      lock.lock();
      if (--busy_ == 0) done_.notify_one();
    }
  }

  std::mutex launch_mutex_;
  std::mutex mutex_;
  std::condition_variable wake_;
  std::condition_variable done_;
  int n_helpers_ = 0;
  GridRun* grid_ = nullptr;
  uint64_t generation_ = 0;
  int seats_ = 0;
  int busy_ = 0;
};

WorkerPool& pool() {
  static WorkerPool* p = new WorkerPool(worker_count() - 1);
  return *p;
}

bool valid_config(const LaunchConfig& c) {
  const dim3 b = c.block;
  const dim3 g = c.grid;
  if (b.x == 0 || b.y == 0 || b.z == 0 || b.x > kMaxBlockThreads || b.y > kMaxBlockThreads || b.z > 64) return false;
  if (uint64_t{b.x} * b.y * b.z > kMaxBlockThreads) return false;
  if (g.x == 0 || g.y == 0 || g.z == 0 || g.y > 65535 || g.z > 65535) return false;
  return c.shared_bytes <= kSharedMemPerBlock;
}

}  // namespace

int worker_count() {
  static const int n = env_int("CAI_SIMT_THREADS", static_cast<int>(std::max(1u, std::thread::hardware_concurrency())));
  return n;
}

void launch(const LaunchConfig& config, void (*body)(const void*), const void* ctx) {
  if (!valid_config(config)) {
    set_last_error(gpuErrorInvalidConfiguration);
    return;
  }
  const BlockJob job{body, ctx, config.grid, config.block, config.shared_bytes, warp_size(), reverse_order()};
  const uint64_t n_blocks = uint64_t{config.grid.x} * config.grid.y * config.grid.z;
  const gpuError_t e = pool().run(job, n_blocks);
  if (e != gpuSuccess) set_last_error(e);
}

}  // namespace simt::detail
