// Declarations shared by the simt runtime's files: environment settings, the last-error slot, the block runner.
#pragma once

#include <cstddef>

#include "hal/cuda/vendors/simt.h"

namespace simt::detail {

// An environment variable as a byte size ("4GiB", "512MiB", "64KiB", "1048576"; K/M/G/T and KB/KiB forms are all
// binary), or `fallback` when unset or malformed.
size_t env_size(const char* name, size_t fallback);
// An environment variable as a positive integer, or `fallback` when unset or malformed.
int env_int(const char* name, int fallback);

// Devices this runtime exposes (CAI_SIMT_DEVICES, default 1) and the calling host thread's current one (gpuSetDevice).
int device_count();
int current_device();

// Records e as the calling host thread's last error (read and cleared by gpuGetLastError).
void set_last_error(gpuError_t e);

inline constexpr size_t kSharedMemPerBlock = 48 * 1024;  // the dynamic shared memory a launch may ask for
inline constexpr unsigned kMaxBlockThreads = 1024;

// One block's worth of a launch, as the workers see it.
struct BlockJob {
  void (*body)(const void*);
  const void* ctx;
  dim3 grid;
  dim3 block;
  size_t shared_bytes;
  int warp_size;
  bool reverse = false;  // threads start, and leave barriers and warp operations, from the highest index down
};

// Runs block `block_idx` of `job` on the calling OS thread, its GPU threads as fibers. Returns gpuSuccess, or
// gpuErrorLaunchFailure when the block deadlocks (threads wait at a barrier or warp operation that can never
// complete, e.g. because other threads returned).
gpuError_t run_block(const BlockJob& job, uint3 block_idx);

// Worker OS threads used for grids (the launching thread included).
int worker_count();

}  // namespace simt::detail
