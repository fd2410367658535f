// GpuDevice: device selection, allocation (OOM as a code), the copy/sync/event calls on the device's one stream.
#include <cstdio>
#include <new>

#include "hal/cuda/backend/gpu_device.h"

namespace cai::gpu {

int runtime_fail(CaiError* err, gpuError_t e, const char* what) {
  (void)gpuGetLastError();  // a failed allocation must not surface again at the next launch check
  const int code = e == gpuErrorMemoryAllocation ? CAI_ERR_OUT_OF_MEMORY : CAI_ERR_INTERNAL;
  return fail(err, code, "%s: %s", what, gpuGetErrorString(e));
}

GpuStreamOwner::~GpuStreamOwner() {
  if (stream) (void)gpuStreamDestroy(stream);
}

GpuDevice::GpuDevice(int index, gpuStream_t stream)
    : index_(index), stream_{stream}, scratch_(stream), staging_(stream) {
  ctx_.stream = stream;
  ctx_.scratch = &scratch_;
}

int GpuDevice::open(int index, std::unique_ptr<GpuDevice>* out, CaiError* err) {
  gpuError_t e = gpuSetDevice(index);
  if (e != gpuSuccess) return runtime_fail(err, e, "select device");
  gpuDeviceProp prop{};
  e = gpuGetDeviceProperties(&prop, index);
  if (e != gpuSuccess) return runtime_fail(err, e, "read device properties");
  gpuStream_t stream{};
  e = gpuStreamCreate(&stream);
  if (e != gpuSuccess) return runtime_fail(err, e, "create a stream");
  std::unique_ptr<GpuDevice> d(new GpuDevice(index, stream));
  d->ctx_.n_sms = prop.multiProcessorCount;
  d->ctx_.warp_size = prop.warpSize;
  d->ctx_.shared_mem_per_block = prop.sharedMemPerBlock;
  char text[512];
  std::snprintf(text, sizeof text, "%s:%d", kBackendName, index);
  d->name_ = text;
  std::snprintf(text, sizeof text, "%s, %d SMs, %.1f GiB, warp %d", prop.name, prop.multiProcessorCount,
                static_cast<double>(prop.totalGlobalMem) / (1u << 30), prop.warpSize);
  d->description_ = text;
  d->telemetry_ = telemetry_open(index);
  d->c_device_ = d->plugin::Device::c_device(d->name_.c_str(), d->description_.c_str(), false, &gpu_ops());
  *out = std::move(d);
  return CAI_OK;
}

GpuDevice::~GpuDevice() {
  if (activate(nullptr) == CAI_OK) (void)gpuStreamSynchronize(stream_.stream);
}

int GpuDevice::activate(CaiError* err) {
  const gpuError_t e = gpuSetDevice(index_);
  return e == gpuSuccess ? CAI_OK : runtime_fail(err, e, name_.c_str());
}

int GpuDevice::memory_info(uint64_t* total_bytes, uint64_t* free_bytes, CaiError* err) {
  if (int rc = activate(err)) return rc;
  size_t free_now = 0, total = 0;
  const gpuError_t e = gpuMemGetInfo(&free_now, &total);
  if (e != gpuSuccess) return runtime_fail(err, e, "memory_info");
  *total_bytes = total;
  *free_bytes = free_now;
  return CAI_OK;
}

int GpuDevice::telemetry(CaiTelemetry* out, CaiError*) {
  out->valid = 0;
  telemetry_read(telemetry_, out);
  return CAI_OK;
}

int GpuDevice::allocate(size_t n_bytes, bool host_pinned, void** out, CaiError* err) {
  *out = nullptr;
  if (int rc = activate(err)) return rc;
  if (n_bytes == 0) return CAI_OK;
  const gpuError_t e = host_pinned ? gpuMallocHost(out, n_bytes) : gpuMalloc(out, n_bytes);
  if (e == gpuSuccess) return CAI_OK;
  *out = nullptr;
  char what[160];
  std::snprintf(what, sizeof what, "allocate %zu bytes of %s memory", n_bytes, host_pinned ? "pinned host" : "device");
  return runtime_fail(err, e, what);
}

// The vendor runtimes' free waits for queued work that may still use the memory (simt runs work at the call).
void GpuDevice::free(void* ptr, bool host_pinned) noexcept {
  if (!ptr || activate(nullptr) != CAI_OK) return;
  (void)(host_pinned ? gpuFreeHost(ptr) : gpuFree(ptr));
}

int GpuDevice::copy_to_device(void* dst, const void* src, size_t n, CaiError* err) {
  if (int rc = activate(err)) return rc;
  return n == 0 ? CAI_OK : staging_.copy(dst, src, n, err);
}

int GpuDevice::copy_to_host(void* dst, const void* src, size_t n, CaiError* err) {
  if (int rc = activate(err)) return rc;
  if (n == 0) return CAI_OK;
  gpuError_t e = gpuMemcpyAsync(dst, src, n, gpuMemcpyDeviceToHost, stream_.stream);
  if (e == gpuSuccess) e = gpuStreamSynchronize(stream_.stream);
  return e == gpuSuccess ? CAI_OK : runtime_fail(err, e, "copy_to_host");
}

int GpuDevice::synchronize(CaiError* err) {
  if (int rc = activate(err)) return rc;
  const gpuError_t e = gpuStreamSynchronize(stream_.stream);
  return e == gpuSuccess ? CAI_OK : runtime_fail(err, e, "synchronize");
}

// An event handle is a heap box around the runtime's event, whatever type the vendor uses for it.
int GpuDevice::event_record(CaiEventHandle* out, CaiError* err) {
  *out = nullptr;
  if (int rc = activate(err)) return rc;
  auto* box = new (std::nothrow) gpuEvent_t{};
  if (!box) return fail(err, CAI_ERR_OUT_OF_MEMORY, "event_record: out of host memory");
  gpuError_t e = gpuEventCreate(box);
  if (e != gpuSuccess) {
    delete box;
    return runtime_fail(err, e, "event_record: create");
  }
  e = gpuEventRecord(*box, stream_.stream);
  if (e != gpuSuccess) {
    (void)gpuEventDestroy(*box);
    delete box;
    return runtime_fail(err, e, "event_record");
  }
  *out = box;
  return CAI_OK;
}

int GpuDevice::event_wait(CaiEventHandle event, CaiError* err) {
  if (!event) return fail(err, CAI_ERR_INVALID_ARGUMENT, "event_wait: null event");
  const gpuError_t e = gpuEventSynchronize(*static_cast<gpuEvent_t*>(event));
  return e == gpuSuccess ? CAI_OK : runtime_fail(err, e, "event_wait");
}

// A failed query counts as done: event_wait then reports the failure.
bool GpuDevice::event_done(CaiEventHandle event) noexcept {
  if (!event) return true;
  const gpuError_t e = gpuEventQuery(*static_cast<gpuEvent_t*>(event));
  if (e == gpuErrorNotReady) return false;
  if (e != gpuSuccess) (void)gpuGetLastError();
  return true;
}

void GpuDevice::event_destroy(CaiEventHandle event) noexcept {
  if (!event) return;
  auto* box = static_cast<gpuEvent_t*>(event);
  (void)gpuEventDestroy(*box);
  delete box;
}

}  // namespace cai::gpu
