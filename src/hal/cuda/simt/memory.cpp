// simt device memory: one capped pool of host allocations per device (CAI_SIMT_MEMORY each) with pointer checks, plus
// copies and sets, which accept only the current device's memory (gpuSetDevice), as a card without peer access would.
#include <cstdlib>
#include <cstring>
#include <iterator>
#include <map>
#include <mutex>
#include <vector>

#include "hal/cuda/simt/internal.h"

namespace simt {
namespace {

constexpr size_t kAlign = 256;  // as cudaMalloc
constexpr size_t kDefaultCap = size_t{4} << 30;

size_t round_up(size_t n) { return (n + kAlign - 1) / kAlign * kAlign; }

// Live gpuMalloc allocations by start address, and their total against the cap.
class DevicePool {
 public:
  gpuError_t allocate(void** p, size_t n) {
    *p = nullptr;
    if (n == 0) return gpuSuccess;
    if (n > cap_) return gpuErrorMemoryAllocation;
    const size_t bytes = round_up(n);
    {
      std::lock_guard lock(mutex_);
      if (bytes > cap_ - used_) return gpuErrorMemoryAllocation;
      used_ += bytes;
    }
    void* mem = std::aligned_alloc(kAlign, bytes);
    if (!mem) {
      std::lock_guard lock(mutex_);
      used_ -= bytes;
      return gpuErrorMemoryAllocation;
    }
    std::memset(mem, 0xff, bytes);  // like a fresh GPU buffer, never zeros: float NaN everywhere
    std::lock_guard lock(mutex_);
    live_.emplace(reinterpret_cast<uintptr_t>(mem), Allocation{n, bytes});
    *p = mem;
    return gpuSuccess;
  }

  gpuError_t release(void* p) {
    if (!p) return gpuSuccess;
    {
      std::lock_guard lock(mutex_);
      const auto it = live_.find(reinterpret_cast<uintptr_t>(p));
      if (it == live_.end()) return gpuErrorInvalidValue;
      used_ -= it->second.reserved;
      live_.erase(it);
    }
    std::free(p);
    return gpuSuccess;
  }

  bool contains(const void* p, size_t n) {
    const uintptr_t a = reinterpret_cast<uintptr_t>(p);
    std::lock_guard lock(mutex_);
    auto it = live_.upper_bound(a);
    if (it == live_.begin()) return false;
    it = std::prev(it);
    const uintptr_t end = it->first + it->second.size;
    return a <= end && n <= end - a;
  }

  void info(size_t* free_bytes, size_t* total_bytes) {
    std::lock_guard lock(mutex_);
    *free_bytes = cap_ - used_;
    *total_bytes = cap_;
  }

 private:
  struct Allocation {
    size_t size;      // as asked
    size_t reserved;  // counted against the cap
  };

  const size_t cap_ = detail::env_size("CAI_SIMT_MEMORY", kDefaultCap);
  std::mutex mutex_;
  std::map<uintptr_t, Allocation> live_;
  size_t used_ = 0;
};

// Every device's pool; never destroyed: static destructors elsewhere may still free.
std::vector<DevicePool>& device_pools() {
  static auto* pools = new std::vector<DevicePool>(static_cast<size_t>(detail::device_count()));
  return *pools;
}

DevicePool& device_pool() { return device_pools()[static_cast<size_t>(detail::current_device())]; }

// Failing calls also become the thread's last error, as in the CUDA runtime.
gpuError_t record(gpuError_t e) {
  if (e != gpuSuccess) detail::set_last_error(e);
  return e;
}

}  // namespace

bool is_device_pointer(const void* p, size_t n) { return p && device_pool().contains(p, n); }

namespace {

// gpuFree takes memory of any device, as the vendor runtimes do.
DevicePool* pool_holding(const void* p) {
  for (DevicePool& pool : device_pools())
    if (pool.contains(p, 0)) return &pool;
  return nullptr;
}

}  // namespace

}  // namespace simt

gpuError_t gpuMalloc(void** p, size_t n) {
  return simt::record(p ? simt::device_pool().allocate(p, n) : gpuErrorInvalidValue);
}

gpuError_t gpuFree(void* p) {
  if (!p) return gpuSuccess;
  simt::DevicePool* pool = simt::pool_holding(p);
  return simt::record(pool ? pool->release(p) : gpuErrorInvalidValue);
}

gpuError_t gpuMallocHost(void** p, size_t n) {
  if (!p) return simt::record(gpuErrorInvalidValue);
  *p = n == 0 ? nullptr : std::aligned_alloc(simt::kAlign, simt::round_up(n));
  return simt::record((n == 0 || *p) ? gpuSuccess : gpuErrorMemoryAllocation);
}

gpuError_t gpuFreeHost(void* p) {
  std::free(p);
  return gpuSuccess;
}

gpuError_t gpuMemGetInfo(size_t* free_bytes, size_t* total_bytes) {
  if (!free_bytes || !total_bytes) return simt::record(gpuErrorInvalidValue);
  simt::device_pool().info(free_bytes, total_bytes);
  return gpuSuccess;
}

// Copies and sets check that the device side of each range is device memory: the engine must never hand a host
// pointer where the device expects its own memory, as that would fail on a real card.
gpuError_t gpuMemcpyAsync(void* dst, const void* src, size_t n, gpuMemcpyKind kind, gpuStream_t) {
  if (n == 0) return gpuSuccess;
  const bool dst_device = kind == gpuMemcpyHostToDevice || kind == gpuMemcpyDeviceToDevice;
  const bool src_device = kind == gpuMemcpyDeviceToHost || kind == gpuMemcpyDeviceToDevice;
  if (!dst || !src || (!dst_device && !src_device) || (dst_device && !simt::is_device_pointer(dst, n)) ||
      (src_device && !simt::is_device_pointer(src, n))) {
    return simt::record(gpuErrorInvalidValue);
  }
  std::memmove(dst, src, n);
  return gpuSuccess;
}

gpuError_t gpuMemsetAsync(void* p, int value, size_t n, gpuStream_t) {
  if (n == 0) return gpuSuccess;
  if (!simt::is_device_pointer(p, n)) return simt::record(gpuErrorInvalidValue);
  std::memset(p, value, n);
  return gpuSuccess;
}
