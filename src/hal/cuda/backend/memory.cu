// Device-side helpers of GpuDevice: the growing scratch region and the pinned staging ring for uploads.
#include <algorithm>
#include <cstdio>
#include <cstring>

#include "hal/cuda/backend/gpu_device.h"

namespace cai::gpu {

namespace {

constexpr size_t kScratchGranule = size_t{1} << 20;

size_t round_up(size_t n, size_t granule) { return (n + granule - 1) / granule * granule; }

}  // namespace

DeviceScratch::~DeviceScratch() {
  if (ptr_) (void)gpuFree(ptr_);
}

// Grows by at least half each time so that a slowly rising demand reallocates only a few times.
void* DeviceScratch::get(size_t n_bytes, CaiError* err) {
  if (n_bytes <= size_ && ptr_) return ptr_;
  if (ptr_) {
    (void)gpuStreamSynchronize(stream_);  // earlier ops may still read the old region
    (void)gpuFree(ptr_);
    ptr_ = nullptr;
    size_ = 0;
  }
  const size_t exact = round_up(std::max<size_t>(n_bytes, 1), 256);
  size_t want = round_up(std::max(exact, size_ + size_ / 2), kScratchGranule);
  gpuError_t e = gpuMalloc(&ptr_, want);
  if (e != gpuSuccess && want > exact) {
    (void)gpuGetLastError();
    want = exact;
    e = gpuMalloc(&ptr_, want);
  }
  if (e != gpuSuccess) {
    ptr_ = nullptr;
    char what[96];
    std::snprintf(what, sizeof what, "scratch: allocate %zu bytes", n_bytes);
    runtime_fail(err, e, what);
    return nullptr;
  }
  size_ = want;
  return ptr_;
}

Staging::~Staging() {
  for (Chunk& c : chunks_) {
    if (c.in_flight) (void)gpuEventSynchronize(c.done);
    if (c.done) (void)gpuEventDestroy(c.done);
    if (c.host) (void)gpuFreeHost(c.host);
  }
}

int Staging::init(CaiError* err) {
  for (Chunk& c : chunks_) {
    gpuError_t e = c.host ? gpuSuccess : gpuMallocHost(&c.host, kChunkBytes);
    if (e == gpuSuccess && !c.done) e = gpuEventCreate(&c.done);
    if (e != gpuSuccess) return runtime_fail(err, e, "copy_to_device: set up pinned staging memory");
  }
  ready_ = true;
  return CAI_OK;
}

// Chunk by chunk: wait until the chunk's previous upload is done, fill it, queue its upload, mark its end.
int Staging::copy(void* dst, const void* src, size_t n, CaiError* err) {
  if (!ready_) {
    if (int rc = init(err)) return rc;
  }
  auto* out = static_cast<uint8_t*>(dst);
  const auto* in = static_cast<const uint8_t*>(src);
  for (size_t off = 0; off < n; off += kChunkBytes) {
    const size_t len = std::min(kChunkBytes, n - off);
    Chunk& c = chunks_[next_];
    next_ = (next_ + 1) % kChunks;
    if (c.in_flight) {
      const gpuError_t e = gpuEventSynchronize(c.done);
      if (e != gpuSuccess) return runtime_fail(err, e, "copy_to_device: wait for a staging chunk");
      c.in_flight = false;
    }
    std::memcpy(c.host, in + off, len);
    gpuError_t e = gpuMemcpyAsync(out + off, c.host, len, gpuMemcpyHostToDevice, stream_);
    if (e == gpuSuccess) e = gpuEventRecord(c.done, stream_);
    if (e != gpuSuccess) return runtime_fail(err, e, "copy_to_device");
    c.in_flight = true;
  }
  return CAI_OK;
}

}  // namespace cai::gpu
