// The block runner: one GPU block on one OS thread, its threads as Boost.Context fibers, with barriers, warp
// rendezvous and deadlock detection. A fiber that waits switches straight to the next ready one (one context switch
// per wait, not two through a scheduler); the worker's own stack is the scheduler, entered only to start a block and
// when no fiber is ready (the block is done, deadlocked or failed).
#include <sys/mman.h>

#include <boost/context/detail/fcontext.hpp>
#include <vector>

#include "hal/cuda/simt/internal.h"

#if defined(__SANITIZE_ADDRESS__)
#define CAI_SIMT_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define CAI_SIMT_ASAN 1
#endif
#endif
#if defined(CAI_SIMT_ASAN)
#include <sanitizer/asan_interface.h>
#include <sanitizer/common_interface_defs.h>
#endif

namespace simt::detail {

thread_local constinit const ThreadInfo* tls_thread = nullptr;
thread_local constinit BlockInfo tls_block{};

namespace {

namespace bctx = boost::context::detail;

// ASan must be told about every stack switch, or it reports false stack overflows and use-after-scope.
#if defined(CAI_SIMT_ASAN)
constexpr size_t kDefaultStack = 256 * 1024;  // instrumented frames are larger
void switch_start(void** fake_stack, const void* bottom, size_t size) {
  __sanitizer_start_switch_fiber(fake_stack, bottom, size);
}
void switch_finish(void* fake_stack, const void** old_bottom, size_t* old_size) {
  __sanitizer_finish_switch_fiber(fake_stack, old_bottom, old_size);
}
void forget_stack(char* bottom, size_t size) { ASAN_UNPOISON_MEMORY_REGION(bottom, size); }
#else
constexpr size_t kDefaultStack = 64 * 1024;
void switch_start(void**, const void*, size_t) {}
void switch_finish(void*, const void**, size_t*) {}
void forget_stack(char*, size_t) {}
#endif

size_t stack_size() {
  static const size_t size = [] {
    const size_t page = 4096;
    const size_t n = env_size("CAI_SIMT_STACK", kDefaultStack);
    return (n < 16 * 1024 ? 16 * 1024 : n + page - 1) / page * page;
  }();
  return size;
}

// Fiber stacks of one worker: one mapping for a full block, made on first use and reused for every block after.
// A GPU thread takes a stack when it starts and gives it back when it returns, so a block whose threads never wait
// runs on two (cache-warm) stacks: the next thread takes one before the finished one is given back. Each stack sits
// above a guard page (when the kernel allows the mapping split), and stack tops are staggered by a few cache lines:
// at a power-of-two stride, all the suspended fibers' saved registers would fall into the same cache sets and evict
// each other.
constexpr size_t kGuard = 4096;
constexpr size_t kStagger = 8192;

class StackPool {
 public:
  StackPool() = default;
  StackPool(const StackPool&) = delete;
  StackPool& operator=(const StackPool&) = delete;
  ~StackPool() {
    if (base_) munmap(base_, kMaxBlockThreads * stride());
  }

  size_t size() const { return size_; }
  // The lowest address of a free stack, or null when the mapping failed.
  char* acquire() {
    if (!base_ && !map()) return nullptr;
    char* s = free_.back();
    free_.pop_back();
    return s;
  }
  void release(char* s) { free_.push_back(s); }

 private:
  size_t stride() const { return kGuard + kStagger + size_; }
  bool map() {
    size_ = stack_size();
    void* p = mmap(nullptr, kMaxBlockThreads * stride(), PROT_READ | PROT_WRITE,
                   MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (p == MAP_FAILED) return false;
    base_ = static_cast<char*>(p);
    for (size_t i = kMaxBlockThreads; i-- > 0;) {
      char* slot = base_ + i * stride();
      mprotect(slot, kGuard, PROT_NONE);  // best effort: without it an overflow corrupts the neighbour silently
      free_.push_back(slot + kGuard + i * 9 % 128 * 64);
    }
    return true;
  }

  char* base_ = nullptr;
  size_t size_ = 0;
  std::vector<char*> free_;
};

enum class State : uint8_t { ready, barrier, warp, done };

struct Fiber {
  ThreadInfo info;
  bctx::fcontext_t ctx;  // null until started
  char* stack;
  void* fake_stack;  // ASan's fake frames while switched out
  int warp;
  State state;
};

struct Warp {
  uint64_t values[2][64];  // double-buffered by generation: lanes read op g while the first ones publish op g + 1
  uint64_t live_at[2];     // the live lanes when op g completed
  uint64_t live;           // lanes of the warp that have not returned
  int n_live;              // how many they are
  int arrived;
  unsigned gen;
};

class BlockRunner {
 public:
  gpuError_t run(const BlockJob& job, uint3 block_idx);
  void barrier();
  WarpView exchange(uint64_t bits);

 private:
  static void entry(bctx::transfer_t t);
  void setup(const BlockJob& job, uint3 block_idx);
  Fiber* next_ready();
  void switch_to(Fiber* to, bool leaving_done);
  void land(bctx::transfer_t t, void* fake_stack);
  void suspend() { switch_to(next_ready(), false); }
  void finish_running();
  void complete_warp_op(int warp);
  void make_ready(int i);
  void abandon();

  const BlockJob* job_ = nullptr;
  std::vector<Fiber> fibers_;
  std::vector<Warp> warps_;
  std::vector<int> ready_;  // ring buffer: a fiber is queued at most once
  size_t ready_head_ = 0;
  size_t ready_count_ = 0;
  int n_threads_ = 0;
  int n_live_ = 0;
  int n_at_barrier_ = 0;
  gpuError_t error_ = gpuSuccess;
  Fiber* running_ = nullptr;  // null: the scheduler
  Fiber* from_ = nullptr;     // the context that made the last switch (null: the scheduler)
  bctx::fcontext_t scheduler_ = nullptr;
  const void* scheduler_bottom_ = nullptr;  // the worker's own stack, for ASan
  size_t scheduler_size_ = 0;
  void* scheduler_fake_ = nullptr;
  StackPool stacks_;
  struct alignas(64) SharedLine {
    unsigned char bytes[64];
  };
  std::vector<SharedLine> shared_ = std::vector<SharedLine>(kSharedMemPerBlock / sizeof(SharedLine));
};

// Each worker's runner, and a plain pointer to it for the barrier and warp calls made while a block runs (the
// owning object needs a TLS constructor call on every access).
thread_local BlockRunner tls_runner;
thread_local constinit BlockRunner* tls_running = nullptr;

void BlockRunner::setup(const BlockJob& job, uint3 block_idx) {
  job_ = &job;
  const dim3 b = job.block;
  const int ws = job.warp_size;
  n_threads_ = static_cast<int>(b.x * b.y * b.z);
  fibers_.resize(n_threads_);
  ready_.resize(n_threads_);
  for (int i = 0; i < n_threads_; ++i) {
    const unsigned u = static_cast<unsigned>(i);
    fibers_[i] =
        Fiber{{{u % b.x, u / b.x % b.y, u / (b.x * b.y)}, i % ws}, nullptr, nullptr, nullptr, i / ws, State::ready};
    ready_[i] = job.reverse ? n_threads_ - 1 - i : i;
  }
  warps_.resize((n_threads_ + ws - 1) / ws);
  for (size_t w = 0; w < warps_.size(); ++w) {
    const int lanes = std::min(ws, n_threads_ - static_cast<int>(w) * ws);
    warps_[w].live = lanes == 64 ? ~uint64_t{0} : (uint64_t{1} << lanes) - 1;
    warps_[w].n_live = lanes;
    warps_[w].arrived = 0;
    warps_[w].gen = 0;
  }
  ready_head_ = 0;
  ready_count_ = n_threads_;
  n_live_ = n_threads_;
  n_at_barrier_ = 0;
  error_ = gpuSuccess;
  tls_block = BlockInfo{block_idx, job.block, job.grid, ws, shared_.data()};
}

gpuError_t BlockRunner::run(const BlockJob& job, uint3 block_idx) {
  setup(job, block_idx);
  running_ = nullptr;
  while (Fiber* f = next_ready()) switch_to(f, false);  // returns once no fiber is ready
  tls_thread = nullptr;
  if (n_live_ == 0) return gpuSuccess;
  abandon();
  return error_ == gpuSuccess ? gpuErrorLaunchFailure : error_;
}

void BlockRunner::make_ready(int i) {
  fibers_[i].state = State::ready;
  ready_[(ready_head_ + ready_count_) % ready_.size()] = i;
  ++ready_count_;
}

// The next fiber to run, given a stack and context when it has not started; null when none is ready (or the block has
// failed), which sends control back to the scheduler.
Fiber* BlockRunner::next_ready() {
  if (ready_count_ == 0 || error_ != gpuSuccess) return nullptr;
  Fiber& f = fibers_[ready_[ready_head_]];
  ready_head_ = (ready_head_ + 1) % ready_.size();
  --ready_count_;
  if (!f.ctx) {
    f.stack = stacks_.acquire();
    if (!f.stack) {
      error_ = gpuErrorMemoryAllocation;
      return nullptr;
    }
    f.ctx = bctx::make_fcontext(f.stack + stacks_.size(), stacks_.size(), &BlockRunner::entry);
  }
  return &f;
}

// Leaves the running context (a fiber, or the scheduler) for `to` (null: the scheduler). Returns when something
// switches back here; a fiber that has finished (leaving_done) never comes back.
void BlockRunner::switch_to(Fiber* to, bool leaving_done) {
  Fiber* const self = running_;
  void** fake = leaving_done ? nullptr : self ? &self->fake_stack : &scheduler_fake_;
  switch_start(fake, to ? to->stack : scheduler_bottom_, to ? stacks_.size() : scheduler_size_);
  from_ = self;
  running_ = to;
  tls_thread = to ? &to->info : nullptr;
  const bctx::transfer_t t = bctx::jump_fcontext(to ? to->ctx : scheduler_, this);
  land(t, self ? self->fake_stack : scheduler_fake_);
}

// Right after a switch into this context: keep where the switching context stopped (or free its stack if it finished).
void BlockRunner::land(bctx::transfer_t t, void* fake_stack) {
  Fiber* const from = from_;
  if (!from) {  // from the scheduler: its context, and (for ASan) the bounds of the worker's stack
    switch_finish(fake_stack, &scheduler_bottom_, &scheduler_size_);
    scheduler_ = t.fctx;
    return;
  }
  switch_finish(fake_stack, nullptr, nullptr);
  if (from->state == State::done) {
    stacks_.release(from->stack);
    from->stack = nullptr;
    from->ctx = nullptr;
  } else {
    from->ctx = t.fctx;
  }
}

void BlockRunner::entry(bctx::transfer_t t) {
  auto* self = static_cast<BlockRunner*>(t.data);
  self->land(t, nullptr);
  self->job_->body(self->job_->ctx);
  self->finish_running();
  self->switch_to(self->next_ready(), true);  // this fiber is gone
}

void BlockRunner::finish_running() {
  Fiber& f = *running_;
  f.state = State::done;
  --n_live_;
  Warp& w = warps_[f.warp];
  w.live &= ~(uint64_t{1} << f.info.lane);
  --w.n_live;
  if (w.arrived > 0 && w.arrived == w.n_live) complete_warp_op(f.warp);
}

void BlockRunner::barrier() {
  if (++n_at_barrier_ < n_threads_) {
    running_->state = State::barrier;
    suspend();
    return;
  }
  n_at_barrier_ = 0;  // the last thread to arrive releases the others and goes on
  for (int k = 0; k < n_threads_; ++k) {
    const int i = job_->reverse ? n_threads_ - 1 - k : k;
    if (fibers_[i].state == State::barrier) make_ready(i);
  }
}

WarpView BlockRunner::exchange(uint64_t bits) {
  Fiber& f = *running_;
  Warp& w = warps_[f.warp];
  const unsigned g = w.gen & 1u;
  w.values[g][f.info.lane] = bits;
  if (++w.arrived == w.n_live) {
    complete_warp_op(f.warp);
  } else {
    f.state = State::warp;
    suspend();
  }
  return {w.values[g], w.live_at[g], f.info.lane, job_->warp_size};
}

void BlockRunner::complete_warp_op(int warp) {
  Warp& w = warps_[warp];
  w.live_at[w.gen & 1u] = w.live;
  w.arrived = 0;
  ++w.gen;
  const int ws = job_->warp_size;
  const int end = std::min(n_threads_, (warp + 1) * ws);
  for (int k = warp * ws; k < end; ++k) {
    const int i = job_->reverse ? end - 1 - (k - warp * ws) : k;
    if (fibers_[i].state == State::warp) make_ready(i);
  }
}

// After a deadlock the waiting fibers are dropped where they stand (objects on their stacks are not destroyed).
void BlockRunner::abandon() {
  for (Fiber& f : fibers_) {
    if (!f.stack) continue;
    forget_stack(f.stack, stacks_.size());
    stacks_.release(f.stack);
    f.stack = nullptr;
    f.ctx = nullptr;
  }
}

}  // namespace

void block_barrier() { tls_running->barrier(); }

WarpView warp_exchange(uint64_t bits) { return tls_running->exchange(bits); }

gpuError_t run_block(const BlockJob& job, uint3 block_idx) {
  tls_running = &tls_runner;
  return tls_runner.run(job, block_idx);
}

}  // namespace simt::detail
