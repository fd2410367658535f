// GpuDevice: one CUDA-dialect device behind the plugin ABI (memory, its one stream, staging, events, scratch).
#pragma once

#include <memory>
#include <string>

#include "cai/backend_plugin.hpp"
#include "hal/cuda/kernels/launchers.h"

namespace cai::gpu {

// The backend's name in this build: "cuda", "hip" or "simt".
extern const char* const kBackendName;

// A runtime failure as a CAI code (device OOM → CAI_ERR_OUT_OF_MEMORY, else CAI_ERR_INTERNAL) with a message naming
// `what`. Also clears the runtime's last error so that a later launch check does not report it again.
int runtime_fail(CaiError* err, gpuError_t e, const char* what);

// The ops table shared by every device of this plugin (ops.cu).
const CaiOps& gpu_ops();

// Vendor telemetry, its library loaded at run time (CUDA: NVML; HIP: ROCm SMI; simt: none). open() returns null
// when unavailable; read() then reports nothing.
void* telemetry_open(int device_index);
void telemetry_read(void* source, CaiTelemetry* out);

// The device scratch region the launchers share; grows on demand (stream-ordered, so reuse between ops is safe).
class DeviceScratch final : public Scratch {
 public:
  explicit DeviceScratch(gpuStream_t stream) : stream_(stream) {}
  ~DeviceScratch() override;
  DeviceScratch(const DeviceScratch&) = delete;
  DeviceScratch& operator=(const DeviceScratch&) = delete;
  void* get(size_t n_bytes, CaiError* err) override;

 private:
  gpuStream_t stream_;
  void* ptr_ = nullptr;
  size_t size_ = 0;
};

// A ring of pinned host chunks that copy_to_device goes through, so callers may reuse their source at once and
// uploads still overlap with device work. Chunks are allocated on first use.
class Staging {
 public:
  static constexpr size_t kChunkBytes = size_t{4} << 20;
  static constexpr int kChunks = 4;

  explicit Staging(gpuStream_t stream) : stream_(stream) {}
  ~Staging();
  Staging(const Staging&) = delete;
  Staging& operator=(const Staging&) = delete;
  int copy(void* dst, const void* src, size_t n, CaiError* err);

 private:
  struct Chunk {
    void* host = nullptr;
    gpuEvent_t done{};
    bool in_flight = false;
  };
  int init(CaiError* err);

  gpuStream_t stream_;
  Chunk chunks_[kChunks];
  int next_ = 0;
  bool ready_ = false;
};

// The collectives of this build's vendor library (collectives.cu): NCCL on CUDA and RCCL on HIP, opened with dlopen;
// on simt an in-plugin one that stands in for them.
const CaiCollectives* collectives();

// Owns a stream; declared before the members that queue on it so that it is destroyed after them.
struct GpuStreamOwner {
  gpuStream_t stream{};
  ~GpuStreamOwner();
};

class GpuDevice final : public plugin::Device {
 public:
  // Opens device `index` (its stream, properties, telemetry source).
  static int open(int index, std::unique_ptr<GpuDevice>* out, CaiError* err);
  ~GpuDevice() override;
  GpuDevice(const GpuDevice&) = delete;
  GpuDevice& operator=(const GpuDevice&) = delete;

  const CaiDevice* table() const { return &c_device_; }
  // Makes this device current on the calling thread (CUDA/HIP keep a current device per thread).
  int activate(CaiError* err);
  const Context& context() const { return ctx_; }
  int index() const { return index_; }

  int memory_info(uint64_t* total_bytes, uint64_t* free_bytes, CaiError* err) override;
  int telemetry(CaiTelemetry* out, CaiError* err) override;
  int allocate(size_t n_bytes, bool host_pinned, void** out, CaiError* err) override;
  void free(void* ptr, bool host_pinned) noexcept override;
  int copy_to_device(void* dst, const void* src, size_t n, CaiError* err) override;
  int copy_to_host(void* dst, const void* src, size_t n, CaiError* err) override;
  int synchronize(CaiError* err) override;
  int event_record(CaiEventHandle* out, CaiError* err) override;
  int event_wait(CaiEventHandle event, CaiError* err) override;
  bool event_done(CaiEventHandle event) noexcept override;
  void event_destroy(CaiEventHandle event) noexcept override;
  void set_batch_invariant(bool on) noexcept override { ctx_.batch_invariant = on; }

 private:
  GpuDevice(int index, gpuStream_t stream);

  int index_;
  GpuStreamOwner stream_;
  std::string name_;
  std::string description_;
  Context ctx_;
  DeviceScratch scratch_;
  Staging staging_;
  void* telemetry_ = nullptr;
  CaiDevice c_device_{};
};

}  // namespace cai::gpu
