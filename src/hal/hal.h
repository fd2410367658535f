// The Chip-Agnostic Interface: Registry → Backend → Device → Buffer / Stream / Event. Backends are plugins.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/status.h"
#include "hal/op_table.h"

namespace cai::hal {

class Device;

enum class MemoryKind : uint8_t { kDevice, kHostPinned };

// Owned memory on one device. Move-only; frees itself through its device.
class Buffer {
 public:
  Buffer() = default;
  Buffer(Device* device, void* ptr, size_t size, MemoryKind kind)
      : device_(device), ptr_(ptr), size_(size), kind_(kind) {}
  ~Buffer() { reset(); }
  Buffer(Buffer&& o) noexcept { *this = std::move(o); }
  Buffer& operator=(Buffer&& o) noexcept;
  Buffer(const Buffer&) = delete;
  Buffer& operator=(const Buffer&) = delete;

  void* data() const { return ptr_; }
  size_t size() const { return size_; }
  Device* device() const { return device_; }
  MemoryKind kind() const { return kind_; }
  void reset();

 private:
  Device* device_ = nullptr;
  void* ptr_ = nullptr;
  size_t size_ = 0;
  MemoryKind kind_ = MemoryKind::kDevice;
};

class Event {
 public:
  virtual ~Event() = default;
  virtual Status wait() = 0;
  virtual bool done() const = 0;
};

// Ordered asynchronous work on one device. The CPU backend runs everything eagerly.
//
// Sync contract (the same as the plugin ABI's, include/cai/backend_abi.h): ops and copy_to_device are queued in
// order and may return before the device has done them; the caller may reuse copy_to_device's source as soon as it
// returns. Three calls block the host until earlier work is done: copy_to_host (returns with the bytes in host
// memory), synchronize, and Event::wait. An Event marks the point in the stream where record() was called: done()
// polls it, wait() blocks until the work before it is finished. A forward pass makes exactly one blocking call
// (reading the logits); n_host_syncs() counts blocking calls so tests can check that.
class Stream {
 public:
  virtual ~Stream() = default;
  virtual Status copy_to_device(void* dst, const void* src, size_t n) = 0;
  virtual Status copy_to_host(void* dst, const void* src, size_t n) = 0;
  virtual Status synchronize() = 0;
  virtual std::unique_ptr<Event> record() = 0;
  // Blocking calls so far (copy_to_host, synchronize, Event::wait) — 0 where the backend does not count.
  virtual uint64_t n_host_syncs() const { return 0; }
};

struct MemoryInfo {
  size_t total_bytes = 0;
  size_t free_bytes = 0;
};

// What the vendor exposes; absent readings stay empty.
struct Telemetry {
  std::optional<float> temperature_c;
  std::optional<float> clock_mhz;
  std::optional<float> utilization;  // 0..1
  std::optional<float> power_w;
};

// A backend's own all-reduce over a fixed group of its devices (NCCL, RCCL, ... through the plugin ABI's
// CaiCollectives); Communicator uses it where all ranks of an all-reduce have one.
class NativeCollective {
 public:
  virtual ~NativeCollective() = default;
  virtual std::string library() const = 0;  // "NCCL (libnccl.so.2)"
  // bufs[i] (n F32 values in the memory of the group's i-th device) all become their sum, queued on the streams.
  virtual Status all_reduce_sum(const std::vector<float*>& bufs, size_t n) = 0;
  // Across processes (one rank here): n bytes to rank `peer` or from it, queued on the stream; every send meets the
  // peer's recv of the same size. Where the library has no point-to-point calls, can_send_recv() is false.
  virtual bool can_send_recv() const { return false; }
  virtual Status send(const void* /*buf*/, size_t /*n*/, int /*peer*/) { return unsupported("no send"); }
  virtual Status recv(void* /*buf*/, size_t /*n*/, int /*peer*/) { return unsupported("no recv"); }
  // Ends the pending and later operations with an error, from any thread (where the library can: ncclCommAbort).
  virtual void abort() {}
  // The rest of the collectives (ABI 4.3), in place and with the meaning of Communicator's, over the group's devices
  // (bufs of one pointer across processes); where the library has not got them, can_gather_scatter() is false.
  virtual bool can_gather_scatter() const { return false; }
  virtual Status all_gather(const std::vector<void*>& /*bufs*/, size_t /*part*/) {
    return unsupported("no all_gather");
  }
  virtual Status reduce_scatter_sum(const std::vector<float*>& /*bufs*/, size_t /*n*/) {
    return unsupported("no reduce_scatter");
  }
  virtual Status broadcast(const std::vector<void*>& /*bufs*/, size_t /*n*/, int /*root*/) {
    return unsupported("no broadcast");
  }
  virtual Status all_to_all(const std::vector<const void*>& /*send*/, const std::vector<void*>& /*recv*/,
                            const std::vector<uint64_t>& /*bytes*/) {
    return unsupported("no all_to_all");
  }
};

// The engine's all-gather between the processes of a communicator that spans several (ProcessGroup underneath): each
// process's n bytes into `all`, by rank.
using HostAllGather = std::function<Status(const void* mine, void* all, size_t n)>;

// A backend's collective library across processes (NCCL's ncclGetUniqueId / ncclCommInitRank, through the plugin
// ABI's CaiCollectives): one process makes the unique id, the engine sends it to the others, and each joins with its
// rank and its device. The joined NativeCollective has one rank in this process (bufs of one pointer).
class ProcessCollectives {
 public:
  virtual ~ProcessCollectives() = default;
  virtual std::string library() const = 0;
  virtual size_t unique_id_bytes() const = 0;
  virtual Result<std::vector<uint8_t>> unique_id() = 0;
  // all_gather serves libraries that need a host channel besides the id; the collective keeps it.
  virtual Result<std::unique_ptr<NativeCollective>> join(const std::vector<uint8_t>& id, int n_ranks, int rank,
                                                         HostAllGather all_gather) = 0;
};

class Device {
 public:
  virtual ~Device() = default;
  virtual std::string name() const = 0;         // "cpu:0"
  virtual std::string description() const = 0;  // "x86-64 AVX-512, 2 threads"
  virtual MemoryInfo memory_info() const = 0;
  virtual Telemetry telemetry() const = 0;
  // Where telemetry()'s temperature comes from ("hwmon k10temp Tctl (/sys/...)"); "" = no temperature sensor.
  virtual std::string telemetry_sensor() const { return {}; }
  virtual const OpTable& ops() const = 0;
  virtual Stream& default_stream() = 0;
  virtual OpContext op_context() = 0;
  // Host-addressable memory: kernels and loaders may use device pointers directly (CPU, unified memory).
  virtual bool host_visible() const = 0;
  virtual Result<Buffer> allocate(size_t n_bytes, MemoryKind kind = MemoryKind::kDevice) = 0;
  virtual void free(void* ptr, MemoryKind kind) = 0;

  // See OpContext::batch_invariant; backends that are invariant anyway may ignore it.
  virtual void set_batch_invariant(bool on) = 0;
  // See Precision; a device without a fast path keeps computing exactly and ignores it.
  virtual void set_precision(Precision) {}
  // A dense_gemm weight in a layout of this device's own, chosen once at load (the CPU under --precision fast: Q8_0 /
  // Q4_0 rows interleaved in groups for its integer kernels, the layout depending on the activations' grain).
  // packs_gemm_weight: whether w has one. pack_gemm_weight writes w in that layout to dst (memory of this device,
  // w.n_bytes() long) and returns the view of dst to pass to dense_gemm from then on; the device's embed op reads rows
  // of it too (a tied embedding is the head's weight). Devices without such a layout keep the defaults.
  virtual bool packs_gemm_weight(const TensorView& /*w*/, ActivationGrain /*grain*/) const { return false; }
  virtual Result<TensorView> pack_gemm_weight(const TensorView& w, ActivationGrain /*grain*/, void* /*dst*/) {
    return unsupported("{}: no packed layout for {} weights", name(), dtype_name(w.dtype));
  }

  bool supports(OpId op) const;
  // dtype-aware check: e.g. dense_gemm with a weight dtype this backend has no kernel for.
  virtual bool supports(OpId op, DType weight_dtype) const { return supports(op); }
  // A KV cache dtype this device's kv_write and attention kernels take: the plain ones (is_kv_cache_dtype) everywhere;
  // block-quantized ones (Q8_0) only where a backend overrides this (the CPU; plugins have no Q8_0 KV kernels).
  virtual bool supports_kv_dtype(DType t) const { return is_kv_cache_dtype(t) && !is_quantized(t); }
  // This device's backend's collective over `group` (devices of that backend, in rank order), or null where the
  // backend brings none or one of the group is another backend's. Errors: the vendor library could not create it.
  virtual Result<std::unique_ptr<NativeCollective>> native_collective(const std::vector<Device*>& /*group*/) {
    return std::unique_ptr<NativeCollective>();
  }
  // This device's backend's collectives across processes, or null where the backend brings none or its library is
  // not installed (a group of processes then stages through the ProcessGroup).
  virtual ProcessCollectives* process_collectives() { return nullptr; }
};

// unsupported, naming the device and the KV dtypes it takes, unless device.supports_kv_dtype(t).
Status check_kv_cache_dtype(const Device& device, const char* what, DType t);

// The devices' names joined by `separator` ("simt:0,simt:1").
std::string device_names(const std::vector<Device*>& devices, std::string_view separator = ",");

class Backend {
 public:
  virtual ~Backend() = default;
  virtual std::string name() const = 0;  // "cpu", "cuda", "ascend"...
  virtual std::vector<Device*> devices() = 0;
  // Where the backend comes from and what it runs on, with versions where the vendor API reports them: "built into
  // cai", "plugin /usr/lib/cai/libcai-backend-cuda.so (CUDA runtime 12.4, driver 12.6)".
  virtual std::string runtime() const { return ""; }
};

// Every backend the process knows: the built-in CPU backend plus plugins found at start-up.
class Registry {
 public:
  static Registry& global();  // CPU backend registered on first use

  void add(std::unique_ptr<Backend> backend);
  const std::vector<std::unique_ptr<Backend>>& backends() const { return backends_; }
  Backend* find_backend(const std::string& name) const;
  // The backend a device belongs to, or null.
  Backend* backend_of(const Device& device) const;
  // "cpu", "cpu:0", "cuda:1". Unknown name → not_found listing what exists.
  Result<Device*> find_device(const std::string& spec) const;
  // A device list: comma-separated specs, each "cpu", "simt:1" or a range "cuda:0-7" ("cpu,simt:0-1"). Errors: an
  // unknown device (not_found listing every device that exists), a malformed item or a device named twice
  // (invalid_argument).
  Result<std::vector<Device*>> find_devices(const std::string& list) const;
  // Every device of every backend, by name ("cpu:0, simt:0, simt:1").
  std::string device_names() const;

  // Load libcai-backend-<name>.so files from the directory of the running binary and from each entry of
  // CAI_BACKEND_PATH (colon-separated). A plugin that fails to load is logged and skipped; returns how many loaded.
  int load_plugins_from_default_paths();
  // Load one plugin file; errors name the file and the reason (missing symbol, ABI mismatch, init failure).
  Status load_plugin(const std::string& path);

 private:
  std::vector<std::unique_ptr<Backend>> backends_;
  std::vector<void*> handles_;  // dlopen handles, kept open for the process lifetime
};

}  // namespace cai::hal
