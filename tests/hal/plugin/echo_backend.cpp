// A test backend plugin ("echo") on the C ABI alone: one host-memory device implementing `add` and `embed` itself.
//
// Knobs for the registry tests, read when the entry symbol is called or create() runs:
//   CAI_ECHO_FAIL=1          create() fails with CAI_ERR_UNAVAILABLE
//   CAI_ECHO_ABI=<n>         the entry claims ABI version n
//   CAI_ECHO_OPS_SIZE=<n>    the ops table claims struct_size n (an older or newer plugin)
//   CAI_ECHO_ENTRY_SIZE=<n>  the entry claims struct_size n (a v4.0/v4.1 entry ends before runtime_versions)
//   CAI_ECHO_WRONG=1         add returns wrong numbers (a + b + 0.25): `cai doctor`'s op check must name it
//   CAI_ECHO_HANG=1          add never returns: `cai doctor` must time the step out
#include <cai/backend_plugin.hpp>

#include <chrono>
#include <cstddef>
#include <cstdlib>
#include <cstring>
#include <thread>

namespace {

using cai::plugin::fail;

constexpr uint64_t kCapacity = uint64_t{1} << 30;

// Host memory; copies and ops finish before they return, so the default (always done) events fit.
class EchoDevice final : public cai::plugin::Device {
 public:
  int memory_info(uint64_t* total, uint64_t* free_bytes, CaiError*) override {
    *total = kCapacity;
    *free_bytes = kCapacity;
    return CAI_OK;
  }
  int telemetry(CaiTelemetry* out, CaiError*) override {
    out->valid = CAI_TELEMETRY_TEMPERATURE;
    out->temperature_c = 42.0f;
    return CAI_OK;
  }
  int allocate(size_t n, bool, void** out, CaiError* err) override {
    if (n > kCapacity) return fail(err, CAI_ERR_OUT_OF_MEMORY, "echo: %zu bytes is more than the device has", n);
    *out = std::malloc(n ? n : 1);
    return *out ? CAI_OK : fail(err, CAI_ERR_OUT_OF_MEMORY, "echo: malloc(%zu) failed", n);
  }
  void free(void* p, bool) noexcept override { std::free(p); }
  int copy_to_device(void* dst, const void* src, size_t n, CaiError*) override {
    std::memcpy(dst, src, n);
    return CAI_OK;
  }
  int copy_to_host(void* dst, const void* src, size_t n, CaiError*) override {
    std::memcpy(dst, src, n);
    return CAI_OK;
  }
  int synchronize(CaiError*) override { return CAI_OK; }
};

int echo_add(CaiDeviceHandle, const CaiTensor* a, const CaiTensor* b, const CaiTensor* out, CaiError* err) {
  const int64_t n = cai::plugin::n_elements(*out);
  if (a->dtype != CAI_DTYPE_F32 || b->dtype != CAI_DTYPE_F32 || out->dtype != CAI_DTYPE_F32)
    return fail(err, CAI_ERR_UNSUPPORTED, "add: echo supports F32 only");
  if (cai::plugin::n_elements(*a) != n || cai::plugin::n_elements(*b) != n)
    return fail(err, CAI_ERR_INVALID_ARGUMENT, "add: operands differ in size");
  while (std::getenv("CAI_ECHO_HANG")) std::this_thread::sleep_for(std::chrono::seconds(1));
  const float error = std::getenv("CAI_ECHO_WRONG") ? 0.25f : 0.0f;
  const auto* x = static_cast<const float*>(a->data);
  const auto* y = static_cast<const float*>(b->data);
  auto* z = static_cast<float*>(out->data);
  for (int64_t i = 0; i < n; ++i) z[i] = x[i] + y[i] + error;
  return CAI_OK;
}

int echo_embed(CaiDeviceHandle, const CaiTensor* table, const CaiTensor* ids, const CaiTensor* out, CaiError* err) {
  if (table->dtype != CAI_DTYPE_F32 || table->n_dims != 2 || ids->dtype != CAI_DTYPE_I32)
    return fail(err, CAI_ERR_UNSUPPORTED, "embed: echo takes an F32 [vocab, dim] table and I32 ids");
  const int64_t n_vocab = table->shape[0], dim = table->shape[1];
  const auto* id = static_cast<const int32_t*>(ids->data);
  for (int64_t i = 0; i < cai::plugin::n_elements(*ids); ++i) {
    if (id[i] < 0 || id[i] >= n_vocab)
      return fail(err, CAI_ERR_INVALID_ARGUMENT, "embed: id %d of row %lld is outside [0, %lld)", id[i],
                  static_cast<long long>(i), static_cast<long long>(n_vocab));
    std::memcpy(static_cast<float*>(out->data) + i * dim, static_cast<const float*>(table->data) + id[i] * dim,
                static_cast<size_t>(dim) * sizeof(float));
  }
  return CAI_OK;
}

EchoDevice g_device;
CaiOps g_ops;
CaiDevice g_table;
const CaiDevice* g_tables[1];

long env_number(const char* name, long fallback) {
  const char* v = std::getenv(name);
  return v ? std::strtol(v, nullptr, 10) : fallback;
}

int echo_create(const CaiDevice* const** devices, int32_t* n_devices, CaiError* err) {
  if (std::getenv("CAI_ECHO_FAIL")) return fail(err, CAI_ERR_UNAVAILABLE, "refused by CAI_ECHO_FAIL");
  g_ops = cai::plugin::empty_ops();
  g_ops.add = echo_add;
  g_ops.embed = echo_embed;
  g_ops.struct_size = static_cast<uint32_t>(env_number("CAI_ECHO_OPS_SIZE", sizeof g_ops));
  g_table = g_device.c_device("echo:0", "test plugin device (host memory)", false, &g_ops);
  g_tables[0] = &g_table;
  *devices = g_tables;
  *n_devices = 1;
  return CAI_OK;
}

void echo_destroy() {}

const char* echo_versions() { return "echo runtime 1.0"; }

}  // namespace

CAI_PLUGIN_EXPORT const CaiBackendEntry* cai_backend_entry_v4(void) {
  static CaiBackendEntry entry;
  entry = {static_cast<uint32_t>(env_number("CAI_ECHO_ABI", CAI_BACKEND_ABI_VERSION)),
           static_cast<uint32_t>(env_number("CAI_ECHO_ENTRY_SIZE", sizeof(CaiBackendEntry))),
           "echo",
           echo_create,
           echo_destroy,
           nullptr,
           echo_versions};
  return &entry;
}
