// The simt device: settings from the environment, errors, warp width, streams, events and device properties.
#include <atomic>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string_view>

#include "hal/cuda/simt/internal.h"

namespace simt {

struct Stream {};
struct Event {};

namespace detail {
namespace {

thread_local gpuError_t tls_last_error = gpuSuccess;
thread_local int tls_device = 0;

std::atomic<int>& warp_setting() {
  static std::atomic<int> lanes{env_int("CAI_SIMT_WARP", 32) == 64 ? 64 : 32};
  return lanes;
}

size_t unit_scale(std::string_view unit) {
  if (unit.empty() || unit == "B") return 1;
  const char prefix = unit[0];
  const std::string_view rest = unit.substr(1);
  if (!(rest.empty() || rest == "B" || rest == "iB")) return 0;
  switch (prefix) {
    case 'K':
    case 'k': return size_t{1} << 10;
    case 'M':
    case 'm': return size_t{1} << 20;
    case 'G':
    case 'g': return size_t{1} << 30;
    case 'T':
    case 't': return size_t{1} << 40;
    default: return 0;
  }
}

}  // namespace

size_t env_size(const char* name, size_t fallback) {
  const char* s = std::getenv(name);
  if (!s || !*s) return fallback;
  char* end = nullptr;
  errno = 0;
  const unsigned long long n = std::strtoull(s, &end, 10);
  const size_t scale = end == s || errno != 0 ? 0 : unit_scale(end);
  if (scale == 0 || n > SIZE_MAX / scale) {
    std::fprintf(stderr,
                 "simt: %s=%s is not a size (a whole number with an optional unit such as KiB, MiB or GiB); "
                 "using %zu bytes\n",
                 name, s, fallback);
    return fallback;
  }
  return static_cast<size_t>(n) * scale;
}

int env_int(const char* name, int fallback) {
  const char* s = std::getenv(name);
  if (!s || !*s) return fallback;
  char* end = nullptr;
  const long n = std::strtol(s, &end, 10);
  return (*end != '\0' || n <= 0 || n > 1 << 20) ? fallback : static_cast<int>(n);
}

void set_last_error(gpuError_t e) { tls_last_error = e; }

int device_count() {
  static const int n = env_int("CAI_SIMT_DEVICES", 1);
  return n;
}

int current_device() { return tls_device; }

}  // namespace detail

// CAI_SIMT_ORDER=reverse: start and release a block's threads from the last one down (see simt.h).
std::atomic<bool>& reverse_order_setting() {
  static std::atomic<bool> reverse{[] {
    const char* s = std::getenv("CAI_SIMT_ORDER");
    return s && std::string_view(s) == "reverse";
  }()};
  return reverse;
}

void set_reverse_order(bool reverse) { reverse_order_setting().store(reverse); }
bool reverse_order() { return reverse_order_setting().load(); }

bool set_warp_size(int lanes) {
  if (lanes != 32 && lanes != 64) return false;
  detail::warp_setting().store(lanes);
  return true;
}

int warp_size() { return detail::warp_setting().load(); }

}  // namespace simt

gpuError_t gpuGetLastError() {
  const gpuError_t e = simt::detail::tls_last_error;
  simt::detail::tls_last_error = gpuSuccess;
  return e;
}

const char* gpuGetErrorString(gpuError_t e) {
  switch (e) {
    case gpuSuccess: return "no error";
    case gpuErrorInvalidValue: return "invalid argument";
    case gpuErrorMemoryAllocation: return "out of device memory (simt pool, CAI_SIMT_MEMORY)";
    case gpuErrorInvalidConfiguration: return "invalid launch configuration";
    case gpuErrorInvalidDevice: return "invalid device ordinal";
    case gpuErrorNotReady: return "not ready";
    case gpuErrorLaunchFailure: return "launch failure: a block deadlocked at __syncthreads or a warp operation";
  }
  return "unknown error";
}

gpuError_t gpuStreamCreate(gpuStream_t* s) {
  if (!s) return gpuErrorInvalidValue;
  *s = new simt::Stream;
  return gpuSuccess;
}

gpuError_t gpuStreamDestroy(gpuStream_t s) {
  delete s;
  return gpuSuccess;
}

gpuError_t gpuStreamSynchronize(gpuStream_t) { return gpuSuccess; }  // work ran at the call

gpuError_t gpuEventCreate(gpuEvent_t* e) {
  if (!e) return gpuErrorInvalidValue;
  *e = new simt::Event;
  return gpuSuccess;
}

gpuError_t gpuEventDestroy(gpuEvent_t e) {
  delete e;
  return gpuSuccess;
}

gpuError_t gpuEventRecord(gpuEvent_t e, gpuStream_t) { return e ? gpuSuccess : gpuErrorInvalidValue; }
gpuError_t gpuEventSynchronize(gpuEvent_t e) { return e ? gpuSuccess : gpuErrorInvalidValue; }
gpuError_t gpuEventQuery(gpuEvent_t e) { return e ? gpuSuccess : gpuErrorInvalidValue; }

gpuError_t gpuGetDeviceCount(int* n) {
  if (!n) return gpuErrorInvalidValue;
  *n = simt::detail::device_count();
  return gpuSuccess;
}

gpuError_t gpuSetDevice(int device) {
  if (device < 0 || device >= simt::detail::device_count()) return gpuErrorInvalidDevice;
  simt::detail::tls_device = device;
  return gpuSuccess;
}

gpuError_t gpuGetDeviceProperties(gpuDeviceProp* prop, int device) {
  if (!prop) return gpuErrorInvalidValue;
  if (device < 0 || device >= simt::detail::device_count()) return gpuErrorInvalidDevice;
  *prop = gpuDeviceProp{};
  std::strncpy(prop->name, "simt (CPU emulation)", sizeof(prop->name) - 1);
  size_t free_bytes = 0;
  const int current = simt::detail::tls_device;
  simt::detail::tls_device = device;
  gpuMemGetInfo(&free_bytes, &prop->totalGlobalMem);
  simt::detail::tls_device = current;
  prop->sharedMemPerBlock = simt::detail::kSharedMemPerBlock;
  prop->multiProcessorCount = simt::detail::worker_count();
  prop->warpSize = simt::warp_size();
  return gpuSuccess;
}
