// simt: the CUDA dialect on the host compiler, with GPU semantics emulated on CPU threads (runtime in hal/cuda/simt).
//
// Model: a grid's blocks are spread over a pool of worker OS threads (CAI_SIMT_THREADS, default = hardware threads;
// the launching thread works too). A worker runs one block at a time, each GPU thread of the block as a fiber, so
// `__shared__` (static thread_local) is per block. Fibers switch only at __syncthreads() and warp operations; a
// thread that never reaches one runs to its end in one go. Warp width is 32 or 64 (CAI_SIMT_WARP, or
// simt::set_warp_size). Warp operations need every live lane of the warp: lanes past the end of the block (partial
// last warp) and lanes that returned count as inactive; a shuffle from an inactive lane returns the caller's own
// value and an inactive lane's ballot bit is 0. Threads run in index order; CAI_SIMT_ORDER=reverse (or
// simt::set_reverse_order) starts them, and releases them from barriers and warp operations, from the highest index
// down, so a kernel that reads another thread's write without a barrier gives a wrong answer in one of the two
// orders. CAI_SIMT_DEVICES=N (default 1) exposes N devices; gpuSetDevice picks the calling thread's. Each device's
// memory is ordinary host memory in a capped pool of its own (CAI_SIMT_MEMORY each, default 4GiB), filled with 0xff
// bytes (float NaN) on allocation, and must be treated as not host-visible. Streams run their work at the call, in
// order; events are always complete.
#pragma once

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <atomic>
#include <tuple>
#include <type_traits>
#include <utility>

#define __global__
#define __device__
#define __host__
#define __forceinline__ inline
#define __launch_bounds__(...)
#define __shared__ static thread_local

struct uint3 {
  unsigned x = 0, y = 0, z = 0;
};

struct dim3 {
  unsigned x, y, z;
  constexpr dim3(unsigned x_ = 1, unsigned y_ = 1, unsigned z_ = 1) : x(x_), y(y_), z(z_) {}
};

// ---- host runtime -------------------------------------------------------------------------------------------------

enum gpuError_t : int {  // numbered as the CUDA runtime's
  gpuSuccess = 0,
  gpuErrorInvalidValue = 1,
  gpuErrorMemoryAllocation = 2,
  gpuErrorInvalidConfiguration = 9,
  gpuErrorInvalidDevice = 101,
  gpuErrorNotReady = 600,
  gpuErrorLaunchFailure = 719,  // a block deadlocked at a barrier or warp operation
};

enum gpuMemcpyKind : int { gpuMemcpyHostToDevice = 1, gpuMemcpyDeviceToHost = 2, gpuMemcpyDeviceToDevice = 3 };

namespace simt {
struct Stream;
struct Event;
}  // namespace simt
using gpuStream_t = simt::Stream*;
using gpuEvent_t = simt::Event*;

struct gpuDeviceProp {
  char name[256];
  size_t totalGlobalMem;
  size_t sharedMemPerBlock;
  int multiProcessorCount;  // the worker threads
  int warpSize;
};

gpuError_t gpuGetLastError();  // returns and clears the calling thread's last launch/runtime error
const char* gpuGetErrorString(gpuError_t e);
gpuError_t gpuStreamCreate(gpuStream_t* s);
gpuError_t gpuStreamDestroy(gpuStream_t s);
gpuError_t gpuStreamSynchronize(gpuStream_t s);
gpuError_t gpuEventCreate(gpuEvent_t* e);
gpuError_t gpuEventDestroy(gpuEvent_t e);
gpuError_t gpuEventRecord(gpuEvent_t e, gpuStream_t s);
gpuError_t gpuEventSynchronize(gpuEvent_t e);
gpuError_t gpuEventQuery(gpuEvent_t e);
gpuError_t gpuMalloc(void** p, size_t n);
gpuError_t gpuFree(void* p);
gpuError_t gpuMallocHost(void** p, size_t n);
gpuError_t gpuFreeHost(void* p);
gpuError_t gpuMemGetInfo(size_t* free_bytes, size_t* total_bytes);
gpuError_t gpuMemcpyAsync(void* dst, const void* src, size_t n, gpuMemcpyKind kind, gpuStream_t s = nullptr);
gpuError_t gpuMemsetAsync(void* p, int value, size_t n, gpuStream_t s = nullptr);
gpuError_t gpuGetDeviceCount(int* n);
gpuError_t gpuSetDevice(int device);
gpuError_t gpuGetDeviceProperties(gpuDeviceProp* prop, int device);

template <class T>
gpuError_t gpuMalloc(T** p, size_t n) {
  void* raw = nullptr;
  const gpuError_t e = gpuMalloc(&raw, n);
  *p = static_cast<T*>(raw);
  return e;
}
template <class T>
gpuError_t gpuMallocHost(T** p, size_t n) {
  void* raw = nullptr;
  const gpuError_t e = gpuMallocHost(&raw, n);
  *p = static_cast<T*>(raw);
  return e;
}

namespace simt {

// [p, p + n) lies inside one live gpuMalloc allocation (n == 0: p inside or one past the end of one).
bool is_device_pointer(const void* p, size_t n);
// Lanes per warp for the next launches: 32 or 64 (false and no change otherwise).
bool set_warp_size(int lanes);
int warp_size();
// Thread order of the next launches: index order, or from the highest index down (CAI_SIMT_ORDER=reverse).
void set_reverse_order(bool reverse);
bool reverse_order();

// ---- device-side state, read by the names below -------------------------------------------------------------------

struct ThreadInfo {
  uint3 thread_idx;
  int lane;  // linear thread index % warp width
};
struct BlockInfo {
  uint3 block_idx;
  dim3 block_dim;
  dim3 grid_dim;
  int warp_size = 32;
  void* dynamic_shared = nullptr;
};

namespace detail {
extern thread_local constinit const ThreadInfo* tls_thread;  // the running GPU thread of this worker
extern thread_local constinit BlockInfo tls_block;           // the running block of this worker

void block_barrier();
// The warp rendezvous: publishes `bits` as this lane's value, waits for every live lane of the warp, and returns
// the lanes' values (valid until this lane's next warp operation) with the mask of live lanes, and this lane's
// index and the warp width (so a shuffle reads no thread-local beyond the one inside the call).
struct WarpView {
  const uint64_t* values;
  uint64_t live;
  int lane;
  int width;
};
WarpView warp_exchange(uint64_t bits);

template <class T>
uint64_t to_bits(T v) {
  static_assert(std::is_trivially_copyable_v<T> && sizeof(T) <= sizeof(uint64_t), "warp values: <= 8 bytes");
  uint64_t b = 0;
  std::memcpy(&b, &v, sizeof(T));
  return b;
}
template <class T>
T from_bits(uint64_t b) {
  T v;
  std::memcpy(&v, &b, sizeof(T));
  return v;
}
// The value of lane src_of(lane, width) after the exchange, or `own` when that is outside the warp or inactive.
template <class T, class SrcOf>
T shuffle_from(T own, SrcOf src_of) {
  const WarpView w = warp_exchange(to_bits(own));
  const int src = src_of(w.lane, w.width);
  if (src < 0 || src >= w.width || !((w.live >> src) & 1u)) return own;
  return from_bits<T>(w.values[src]);
}
struct Vote {
  uint64_t ballot;
  uint64_t live;
};
inline Vote vote(int pred) {
  const WarpView w = warp_exchange(pred != 0);
  uint64_t ballot = 0;
  for (int i = 0; i < w.width; ++i) ballot |= static_cast<uint64_t>(w.values[i] != 0) << i;
  return {ballot & w.live, w.live};
}

template <class T>
T atomic_update(T* p, T v, T (*f)(T, T)) {
  std::atomic_ref<T> a(*p);
  T old = a.load();
  while (!a.compare_exchange_weak(old, f(old, v))) {}
  return old;
}
template <class T>
T atomic_cas(T* p, T expected, T desired) {
  std::atomic_ref<T>(*p).compare_exchange_strong(expected, desired);
  return expected;
}

struct LaunchConfig {
  dim3 grid;
  dim3 block;
  size_t shared_bytes;
  gpuStream_t stream;
};
// Runs body(ctx) once per GPU thread of the grid and returns when all are done; a bad configuration or a deadlocked
// block sets the calling thread's last error and the launch does nothing more.
void launch(const LaunchConfig& config, void (*body)(const void*), const void* ctx);
}  // namespace detail

inline void* dynamic_shared() { return detail::tls_block.dynamic_shared; }

// What GPU_LAUNCH(...) evaluates to: call it with the kernel's arguments, which are copied once as on a real GPU.
template <class... Params>
class KernelLaunch {
 public:
  KernelLaunch(const detail::LaunchConfig& config, void (*kernel)(Params...)) : config_(config), kernel_(kernel) {}

  template <class... Args>
  void operator()(Args&&... args) const {
    static_assert(sizeof...(Args) == sizeof...(Params), "kernel argument count");
    struct Frame {
      void (*kernel)(Params...);
      std::tuple<std::decay_t<Params>...> params;
    };
    const Frame frame{kernel_, std::tuple<std::decay_t<Params>...>(std::forward<Args>(args)...)};
    detail::launch(
        config_,
        [](const void* p) {
          const Frame& f = *static_cast<const Frame*>(p);
          std::apply(f.kernel, f.params);
        },
        &frame);
  }

 private:
  detail::LaunchConfig config_;
  void (*kernel_)(Params...);
};

template <class... Params>
KernelLaunch<Params...> make_launch(dim3 grid, dim3 block, size_t shared_bytes, gpuStream_t stream,
                                    void (*kernel)(Params...)) {
  return KernelLaunch<Params...>({grid, block, shared_bytes, stream}, kernel);
}

}  // namespace simt

#define GPU_LAUNCH(grid, block, shared_bytes, stream, ...) \
  ::simt::make_launch((grid), (block), (shared_bytes), (stream), __VA_ARGS__)
#define GPU_DYNAMIC_SHARED(type, name) [[maybe_unused]] type* name = reinterpret_cast<type*>(::simt::dynamic_shared())

// ---- device code ------------------------------------------------------------------------------------------------

#define threadIdx (::simt::detail::tls_thread->thread_idx)
#define blockIdx (::std::as_const(::simt::detail::tls_block).block_idx)
#define blockDim (::std::as_const(::simt::detail::tls_block).block_dim)
#define gridDim (::std::as_const(::simt::detail::tls_block).grid_dim)

inline void __syncthreads() { ::simt::detail::block_barrier(); }
inline void __threadfence() { std::atomic_thread_fence(std::memory_order_seq_cst); }

inline int gpu_warp_size() { return ::simt::detail::tls_block.warp_size; }
template <class T>
T gpu_shfl_xor(T v, int mask) {
  return ::simt::detail::shuffle_from(v, [mask](int lane, int) { return lane ^ mask; });
}
template <class T>
T gpu_shfl_down(T v, int delta) {
  return ::simt::detail::shuffle_from(v, [delta](int lane, int) { return lane + delta; });
}
template <class T>
T gpu_shfl(T v, int src_lane) {
  return ::simt::detail::shuffle_from(v, [src_lane](int, int w) { return ((src_lane % w) + w) % w; });
}
inline uint64_t gpu_ballot(int pred) { return ::simt::detail::vote(pred).ballot; }
inline bool gpu_any(int pred) { return ::simt::detail::vote(pred).ballot != 0; }
inline bool gpu_all(int pred) {
  const ::simt::detail::Vote v = ::simt::detail::vote(pred);
  return v.ballot == v.live;
}
inline void gpu_syncwarp() { ::simt::detail::warp_exchange(0); }

// Atomics: real ones, since blocks run on several OS threads. Each returns the old value.
inline float atomicAdd(float* p, float v) { return std::atomic_ref<float>(*p).fetch_add(v); }
inline int atomicAdd(int* p, int v) { return std::atomic_ref<int>(*p).fetch_add(v); }
inline unsigned atomicAdd(unsigned* p, unsigned v) { return std::atomic_ref<unsigned>(*p).fetch_add(v); }
inline unsigned long long atomicAdd(unsigned long long* p, unsigned long long v) {
  return std::atomic_ref<unsigned long long>(*p).fetch_add(v);
}
inline int atomicMax(int* p, int v) {
  return ::simt::detail::atomic_update<int>(p, v, [](int a, int b) { return a > b ? a : b; });
}
inline unsigned atomicMax(unsigned* p, unsigned v) {
  return ::simt::detail::atomic_update<unsigned>(p, v, [](unsigned a, unsigned b) { return a > b ? a : b; });
}
inline int atomicMin(int* p, int v) {
  return ::simt::detail::atomic_update<int>(p, v, [](int a, int b) { return a < b ? a : b; });
}
inline unsigned atomicMin(unsigned* p, unsigned v) {
  return ::simt::detail::atomic_update<unsigned>(p, v, [](unsigned a, unsigned b) { return a < b ? a : b; });
}
inline int atomicCAS(int* p, int expected, int desired) { return ::simt::detail::atomic_cas(p, expected, desired); }
inline unsigned atomicCAS(unsigned* p, unsigned expected, unsigned desired) {
  return ::simt::detail::atomic_cas(p, expected, desired);
}
inline unsigned long long atomicCAS(unsigned long long* p, unsigned long long expected, unsigned long long desired) {
  return ::simt::detail::atomic_cas(p, expected, desired);
}
inline int atomicExch(int* p, int v) { return std::atomic_ref<int>(*p).exchange(v); }
inline unsigned atomicExch(unsigned* p, unsigned v) { return std::atomic_ref<unsigned>(*p).exchange(v); }
inline float atomicExch(float* p, float v) { return std::atomic_ref<float>(*p).exchange(v); }

// Math the host lacks; expf, sqrtf, INFINITY etc. come from <cmath>.
inline float rsqrtf(float x) { return 1.0f / std::sqrt(x); }
inline float __expf(float x) { return std::exp(x); }
inline float __fdividef(float a, float b) { return a / b; }
template <class T>
T __ldg(const T* p) {
  return *p;
}
