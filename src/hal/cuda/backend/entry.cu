// The plugin's one exported symbol: cai_backend_entry_v4, whose create() opens every device of this build's runtime.
#include <mutex>
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

const CaiBackendEntry kEntry = {
    CAI_BACKEND_ABI_VERSION, sizeof(CaiBackendEntry), kBackendName, create, destroy, collectives()};

}  // namespace

}  // namespace cai::gpu

CAI_PLUGIN_EXPORT const CaiBackendEntry* cai_backend_entry_v4(void) { return &cai::gpu::kEntry; }
