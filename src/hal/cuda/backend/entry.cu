// The plugin's one exported symbol: cai_backend_entry_v4, whose create() opens every device of this build's runtime.
#include <mutex>
#include <string>
#include <vector>

#include "hal/cuda/backend/gpu_device.h"

namespace cai::gpu {

#if defined(CAI_GPU_CUDA)
const char* const kBackendName = "cuda";
#elif defined(CAI_GPU_HIP)
const char* const kBackendName = "hip";
#else
const char* const kBackendName = "simt";
#endif

namespace {

// The open devices, shared by every create() until the matching destroy() (a process may load the plugin into
// several registries). Never destroyed itself, so a late destroy() finds it alive.
struct OpenDevices {
  std::mutex mutex;
  int n_users = 0;
  std::vector<std::unique_ptr<GpuDevice>> devices;
  std::vector<const CaiDevice*> tables;
};

OpenDevices& open_devices() {
  static auto* state = new OpenDevices();
  return *state;
}

// No device (no card, no driver) is CAI_ERR_UNAVAILABLE: the engine then skips this plugin with a log line.
int open_all(OpenDevices& s, CaiError* err) {
  int n = 0;
  const gpuError_t e = gpuGetDeviceCount(&n);
  if (e != gpuSuccess || n <= 0) {
    (void)gpuGetLastError();
    return fail(err, CAI_ERR_UNAVAILABLE, "no %s device: %s", kBackendName,
                e != gpuSuccess ? gpuGetErrorString(e) : "the runtime reports none");
  }
  for (int i = 0; i < n; ++i) {
    std::unique_ptr<GpuDevice> d;
    if (int rc = GpuDevice::open(i, &d, err)) {
      s.tables.clear();
      s.devices.clear();
      return rc;
    }
    s.tables.push_back(d->table());
    s.devices.push_back(std::move(d));
  }
  return CAI_OK;
}

int create(const CaiDevice* const** devices, int32_t* n_devices, CaiError* err) {
  return plugin::guarded(err, "create", [&]() -> int {
    OpenDevices& s = open_devices();
    std::lock_guard<std::mutex> lock(s.mutex);
    if (s.n_users == 0) {
      if (int rc = open_all(s, err)) return rc;
    }
    ++s.n_users;
    *devices = s.tables.data();
    *n_devices = static_cast<int32_t>(s.tables.size());
    return CAI_OK;
  });
}

void destroy() {
  OpenDevices& s = open_devices();
  std::lock_guard<std::mutex> lock(s.mutex);
  if (s.n_users == 0 || --s.n_users > 0) return;
  s.tables.clear();
  s.devices.clear();
}

#if !defined(CAI_GPU_SIMT)
// "12.4" from the vendor's version number: CUDA's 1000 · major + 10 · minor, HIP's 10^7 · major + 10^5 · minor + patch.
std::string version_text(int v) {
#if defined(CAI_GPU_CUDA)
  return std::to_string(v / 1000) + "." + std::to_string(v % 1000 / 10);
#else
  return std::to_string(v / 10000000) + "." + std::to_string(v / 100000 % 100) + "." + std::to_string(v % 100000);
#endif
}
#endif

// What this build runs on: the vendor runtime's and driver's versions as its API reports them.
const char* runtime_versions() {
  static const std::string text = [] {
#if defined(CAI_GPU_SIMT)
    return std::string("simt emulator on the CPU, warp ") + std::to_string(::simt::warp_size());
#else
    const char* vendor = kBackendName[0] == 'c' ? "CUDA" : "HIP";
    int runtime = 0, driver = 0;
    std::string out = std::string(vendor) + " runtime " +
                      (gpuRuntimeGetVersion(&runtime) == gpuSuccess ? version_text(runtime) : "unknown");
    out += ", driver " + (gpuDriverGetVersion(&driver) == gpuSuccess ? version_text(driver) : "unknown");
    (void)gpuGetLastError();
    return out;
#endif
  }();
  return text.c_str();
}

const CaiBackendEntry kEntry = {CAI_BACKEND_ABI_VERSION, sizeof(CaiBackendEntry), kBackendName, create, destroy,
                                collectives(),           runtime_versions};

}  // namespace

}  // namespace cai::gpu

CAI_PLUGIN_EXPORT const CaiBackendEntry* cai_backend_entry_v4(void) { return &cai::gpu::kEntry; }
