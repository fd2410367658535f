// RemoteDevice: in a job of several processes, the stand-in for a device another process drives. Each process builds
// the whole model over the job's devices, and runs every op, allocation and copy meant for a remote device as nothing:
// its allocations reserve address space only (never readable), its ops do no work. Only the communicator
// (cross-process transfers) acts on remote ranks: it sends to and receives from the process that owns them. So the
// model code runs unchanged, in the same order on every process, and each process computes exactly its own shards.
#pragma once

#include <map>
#include <memory>
#include <mutex>

#include "hal/hal.h"
#include "hal/process_group.h"

namespace cai::hal {

// What a process tells the others about its device when the job starts.
struct DeviceInfo {
  char name[48] = {};          // "simt:1"
  char description[112] = {};  // the device's own
  char host[64] = {};          // the machine the owning process runs on
  uint64_t total_bytes = 0, free_bytes = 0;
  int32_t host_visible = 0;  // the real device's host_visible() (its KV cache defaults to F32)
};

class RemoteDevice final : public Device {
 public:
  RemoteDevice(const DeviceInfo& info, int process, ProcessGroup& group);
  // The process (rank in `group`) that drives the device.
  int process() const { return process_; }
  ProcessGroup& group() const { return *group_; }
  const DeviceInfo& info() const { return info_; }

  std::string name() const override;  // "rank1/simt:1"
  std::string description() const override;
  MemoryInfo memory_info() const override;  // as reported at start, less what the stand-in has reserved since
  Telemetry telemetry() const override { return {}; }
  const OpTable& ops() const override;
  Stream& default_stream() override;
  OpContext op_context() override { return {}; }
  bool host_visible() const override { return false; }
  Result<Buffer> allocate(size_t n_bytes, MemoryKind kind) override;
  void free(void* ptr, MemoryKind kind) override;
  void set_batch_invariant(bool) override {}
  bool supports(OpId, DType) const override { return true; }
  bool supports_kv_dtype(DType t) const override { return is_kv_cache_dtype(t); }

 private:
  DeviceInfo info_;
  int process_;
  ProcessGroup* group_;
  std::unique_ptr<Stream> stream_;
  mutable std::mutex mu_;
  std::map<void*, size_t> reserved_;
  size_t reserved_bytes_ = 0;
};

// Whether `d` is driven by another process.
bool is_remote(const Device& d);
// Whether the host addresses `d`'s memory (for a stand-in: the real device's, as its process reported it).
bool host_addresses(const Device& d);
// The process that drives `d`: its own for a remote device, else this one's.
int owning_process(const Device& d, const ProcessGroup& group);

// The job's devices in process-rank order, each process's `local` ones in their order: this process's own and a
// RemoteDevice (kept for the process's life, as backends' devices are) for each of every other's. Collective over the
// group: every process calls it at start, with as many devices. Errors: a peer that does not answer within
// timeout_s; processes offering different numbers of devices (invalid_argument naming the rank).
Result<std::vector<Device*>> job_devices(ProcessGroup& group, const std::vector<Device*>& local, double timeout_s);

}  // namespace cai::hal
