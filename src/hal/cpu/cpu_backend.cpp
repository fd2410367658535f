// CpuDevice: host allocations (64-byte aligned), eager stream, /proc readings for memory, hwmon for temperature.
#include "hal/cpu/cpu_backend.h"

#include <unistd.h>

#include <cstdlib>
#include <cstring>
#include <fstream>
#include <string>

#include "core/thread_pool.h"
#include "hal/cpu/hwmon.h"

namespace cai::hal::cpu {

namespace {

class CpuEvent final : public Event {
 public:
  Status wait() override { return {}; }
  bool done() const override { return true; }
};

class CpuStream final : public Stream {
 public:
  Status copy_to_device(void* dst, const void* src, size_t n) override {
    std::memcpy(dst, src, n);
    return {};
  }
  Status copy_to_host(void* dst, const void* src, size_t n) override {
    std::memcpy(dst, src, n);
    return {};
  }
  Status synchronize() override { return {}; }
  std::unique_ptr<Event> record() override { return std::make_unique<CpuEvent>(); }
};

// Reads "MemTotal:  123 kB" style lines.
size_t meminfo_bytes(const char* key) {
  std::ifstream in("/proc/meminfo");
  std::string name;
  size_t kb = 0;
  std::string unit;
  while (in >> name >> kb >> unit)
    if (name == key) return kb * 1024;
  return 0;
}

class CpuDevice final : public Device {
 public:
  CpuDevice() : pool_(std::make_unique<ThreadPool>(0)), sensor_(find_cpu_package_sensor(sysfs_root_from_env())) {}
  std::string name() const override { return "cpu:0"; }
  std::string description() const override {
    return fmt::format("host CPU, {} threads", pool_->size());
  }
  MemoryInfo memory_info() const override { return {meminfo_bytes("MemTotal:"), meminfo_bytes("MemAvailable:")}; }
  Telemetry telemetry() const override {
    Telemetry t;
    t.temperature_c = sensor_.read_celsius();
    return t;
  }
  std::string telemetry_sensor() const override { return sensor_.describe(); }
  const OpTable& ops() const override { return cpu_op_table(); }
  Stream& default_stream() override { return stream_; }
  OpContext op_context() override {
    OpContext ctx{pool_.get(), &stream_, batch_invariant_};
    ctx.precision = precision_;
    return ctx;
  }
  void set_batch_invariant(bool on) override { batch_invariant_ = on; }
  void set_precision(Precision p) override { precision_ = p; }
  bool host_visible() const override { return true; }
  bool supports_kv_dtype(DType t) const override { return is_kv_cache_dtype(t); }  // Q8_0 included
  Result<Buffer> allocate(size_t n_bytes, MemoryKind kind) override {
    size_t rounded = (n_bytes + 63) / 64 * 64;
    void* p = std::aligned_alloc(64, rounded == 0 ? 64 : rounded);
    if (!p) return out_of_memory("cannot allocate {} bytes of host memory", n_bytes);
    return Buffer(this, p, n_bytes, kind);
  }
  void free(void* ptr, MemoryKind) override { std::free(ptr); }
  void set_threads(int n) { pool_ = std::make_unique<ThreadPool>(n); }

 private:
  std::unique_ptr<ThreadPool> pool_;
  CpuPackageSensor sensor_;
  CpuStream stream_;
  bool batch_invariant_ = false;
  Precision precision_ = Precision::kExact;
};

class CpuBackend final : public Backend {
 public:
  std::string name() const override { return "cpu"; }
  std::vector<Device*> devices() override { return {&device_}; }
  CpuDevice& device() { return device_; }

 private:
  CpuDevice device_;
};

CpuBackend* g_cpu_backend = nullptr;

}  // namespace

std::unique_ptr<Backend> make_cpu_backend() {
  auto b = std::make_unique<CpuBackend>();
  if (!g_cpu_backend) g_cpu_backend = b.get();
  return b;
}

void set_cpu_threads(int n_threads) {
  Registry::global();  // make sure the CPU backend exists
  if (g_cpu_backend) g_cpu_backend->device().set_threads(n_threads);
}

}  // namespace cai::hal::cpu
