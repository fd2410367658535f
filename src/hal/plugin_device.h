// The engine's C++ view of a backend plugin: PluginBackend / PluginDevice / PluginStream / PluginEvent over the C ABI.
#pragma once

#include <atomic>
#include <memory>
#include <string>
#include <vector>

#include "cai/backend_abi.h"
#include "hal/hal.h"

namespace cai::hal {

class PluginDevice;

// A point in a plugin device's stream (event_record); a failed record is kept and returned by wait().
class PluginEvent final : public Event {
 public:
  PluginEvent(PluginDevice& device, CaiEventHandle handle, Status recorded);
  ~PluginEvent() override;
  PluginEvent(const PluginEvent&) = delete;
  PluginEvent& operator=(const PluginEvent&) = delete;
  Status wait() override;
  bool done() const override;

 private:
  PluginDevice& device_;
  CaiEventHandle handle_;
  Status recorded_;
};

class PluginStream final : public Stream {
 public:
  explicit PluginStream(PluginDevice& device) : device_(device) {}
  Status copy_to_device(void* dst, const void* src, size_t n) override;
  Status copy_to_host(void* dst, const void* src, size_t n) override;
  Status synchronize() override;
  std::unique_ptr<Event> record() override;
  uint64_t n_host_syncs() const override { return n_host_syncs_.load(); }
  void count_host_sync() { ++n_host_syncs_; }

 private:
  PluginDevice& device_;
  std::atomic<uint64_t> n_host_syncs_{0};
};

class PluginDevice final : public Device {
 public:
  // Wraps a plugin's device table (read only up to its struct_size); `c` must stay valid as long as this object.
  // Errors name `plugin` (the file) when a required function is missing.
  static Result<std::unique_ptr<PluginDevice>> create(const CaiDevice& c, const std::string& plugin);

  std::string name() const override { return name_; }
  std::string description() const override { return description_; }
  MemoryInfo memory_info() const override;
  Telemetry telemetry() const override;
  std::string telemetry_sensor() const override;
  const OpTable& ops() const override { return table_; }
  Stream& default_stream() override { return stream_; }
  OpContext op_context() override;
  bool host_visible() const override { return c_.host_visible != 0; }
  Result<Buffer> allocate(size_t n_bytes, MemoryKind kind = MemoryKind::kDevice) override;
  void free(void* ptr, MemoryKind kind) override;
  void set_batch_invariant(bool on) override;
  // Through the backend's CaiCollectives where the whole group is this backend's devices.
  Result<std::unique_ptr<NativeCollective>> native_collective(const std::vector<Device*>& group) override;
  // Through the table's comm_unique_id / comm_init_rank where the plugin has them and its library is there.
  ProcessCollectives* process_collectives() override;
  // The backend's collectives table (null: none), set by PluginBackend.
  void set_collectives(const CaiCollectives* c) { collectives_ = c; }

  // For the stream, the events and the op thunks.
  const CaiDevice& c() const { return c_; }
  const CaiOps& c_ops() const { return c_ops_; }
  // CAI_OK → OK; otherwise a Status with the plugin's code and message, prefixed with this device's name.
  Status status_of(int code, const CaiError& err, const char* what) const;
  // Buffers and events still alive: the plugin may only be destroyed when there are none.
  int64_t n_live_objects() const { return n_live_.load(); }
  void count_live(int delta) { n_live_ += delta; }

 private:
  PluginDevice() : stream_(*this) {}

  CaiDevice c_{};
  CaiOps c_ops_{};
  OpTable table_;
  PluginStream stream_;
  std::string name_;
  std::string description_;
  bool batch_invariant_ = false;
  std::atomic<int64_t> n_live_{0};
  const CaiCollectives* collectives_ = nullptr;
  std::unique_ptr<ProcessCollectives> process_collectives_;
  bool process_collectives_checked_ = false;  // the library was looked for (it is looked for once)
};

// Checks what a plugin's entry symbol returned: ABI version, struct size, name and create(). Errors name `path`.
Status check_plugin_entry(const CaiBackendEntry* entry, const std::string& path);

class PluginBackend final : public Backend {
 public:
  // Creates the devices of a checked entry; errors name `path`. A failing create() keeps its code
  // (CAI_ERR_UNAVAILABLE: no device on this machine).
  static Result<std::unique_ptr<PluginBackend>> create(const CaiBackendEntry& entry, const std::string& path);
  // Calls the plugin's destroy() unless buffers or events of its devices are still alive.
  ~PluginBackend() override;

  std::string name() const override { return name_; }
  std::vector<Device*> devices() override;
  std::string runtime() const override { return runtime_; }

 private:
  std::string name_;
  std::string runtime_;  // "plugin <path>", with the plugin's runtime_versions() where it has them
  void (*destroy_)(void) = nullptr;
  std::vector<std::unique_ptr<PluginDevice>> devices_;
};

}  // namespace cai::hal
