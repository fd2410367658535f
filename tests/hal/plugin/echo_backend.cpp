// A test backend plugin ("echo"): one host-memory device that borrows the CPU kernels, proving the plugin ABI.
#include "hal/cpu/cpu_backend.h"
#include "hal/plugin_abi.h"

#include <cstdlib>

namespace {

using namespace cai;
using namespace cai::hal;

class EchoStream final : public Stream {
 public:
  Status copy_to_device(void* d, const void* s, size_t n) override { std::memcpy(d, s, n); return {}; }
  Status copy_to_host(void* d, const void* s, size_t n) override { std::memcpy(d, s, n); return {}; }
  Status synchronize() override { return {}; }
  std::unique_ptr<Event> record() override { return nullptr; }
};

class EchoDevice final : public Device {
 public:
  EchoDevice() {
    table_ = cpu::cpu_op_table();
    table_.attention_gqa = nullptr;  // a backend may leave ops out; supports() must say so
  }
  std::string name() const override { return "echo:0"; }
  std::string description() const override { return "test plugin device"; }
  MemoryInfo memory_info() const override { return {1 << 30, 1 << 30}; }
  Telemetry telemetry() const override { Telemetry t; t.temperature_c = 42.0f; return t; }
  const OpTable& ops() const override { return table_; }
  Stream& default_stream() override { return stream_; }
  OpContext op_context() override { return {nullptr, &stream_}; }
  void set_batch_invariant(bool) override {}
  bool host_visible() const override { return true; }
  Result<Buffer> allocate(size_t n, MemoryKind kind) override {
    void* p = std::malloc(n ? n : 1);
    if (!p) return out_of_memory("echo: {} bytes", n);
    return Buffer(this, p, n, kind);
  }
  void free(void* p, MemoryKind) override { std::free(p); }

 private:
  OpTable table_;
  EchoStream stream_;
};

class EchoBackend final : public Backend {
 public:
  std::string name() const override { return "echo"; }
  std::vector<Device*> devices() override { return {&device_}; }

 private:
  EchoDevice device_;
};

Backend* create_echo(const char** error) {
  if (std::getenv("CAI_ECHO_FAIL")) {
    *error = "refused by CAI_ECHO_FAIL";
    return nullptr;
  }
  return new EchoBackend();
}

const CaiBackendEntry kEntry = {CAI_BACKEND_ABI_VERSION, "echo", create_echo};

}  // namespace

extern "C" __attribute__((visibility("default"))) const CaiBackendEntry* cai_backend_entry_v1(void) { return &kEntry; }
