// Device telemetry on CUDA: NVML (libnvidia-ml.so.1, part of the driver) opened with dlopen at run time, so that
// neither an NVML header nor a link-time library is needed; without it there are no readings, and no error.
#include "hal/cuda/backend/gpu_device.h"

#if defined(CAI_GPU_CUDA)
#include <dlfcn.h>

#include "hal/cuda/backend/dl_symbol.h"

namespace cai::gpu {

namespace {

// The few NVML calls used, declared here so that no NVML header or link-time library is needed. Every call returns
// 0 (NVML_SUCCESS) on success.
using NvmlDevice = void*;
struct NvmlUtilization {
  unsigned gpu;     // percent of time a kernel ran over the last sample period
  unsigned memory;  // percent of time device memory was read or written
};
constexpr int kNvmlTemperatureGpu = 0;  // NVML_TEMPERATURE_GPU
constexpr int kNvmlClockSm = 1;         // NVML_CLOCK_SM

struct Nvml {
  int (*init)();
  int (*handle_by_pci_bus_id)(const char*, NvmlDevice*);
  int (*temperature)(NvmlDevice, int, unsigned*);
  int (*clock)(NvmlDevice, int, unsigned*);
  int (*utilization)(NvmlDevice, NvmlUtilization*);
  int (*power_mw)(NvmlDevice, unsigned*);
};

// Loaded and initialised once per process; null when the driver's NVML is missing or fails to start.
const Nvml* nvml() {
  static const Nvml* loaded = []() -> const Nvml* {
    void* lib = dlopen("libnvidia-ml.so.1", RTLD_NOW | RTLD_LOCAL);
    if (!lib) return nullptr;
    static Nvml n{};
    const bool ok = load_symbol(lib, "nvmlInit_v2", &n.init) &&
                    load_symbol(lib, "nvmlDeviceGetHandleByPciBusId_v2", &n.handle_by_pci_bus_id) &&
                    load_symbol(lib, "nvmlDeviceGetTemperature", &n.temperature) &&
                    load_symbol(lib, "nvmlDeviceGetClockInfo", &n.clock) &&
                    load_symbol(lib, "nvmlDeviceGetUtilizationRates", &n.utilization) &&
                    load_symbol(lib, "nvmlDeviceGetPowerUsage", &n.power_mw);
    if (!ok || n.init() != 0) {
      dlclose(lib);
      return nullptr;
    }
    return &n;
  }();
  return loaded;
}

}  // namespace

// NVML numbers devices its own way; the PCI bus id ties a CUDA device to its NVML handle.
void* telemetry_open(int device_index) {
  const Nvml* n = nvml();
  if (!n) return nullptr;
  char bus_id[32];
  if (cudaDeviceGetPCIBusId(bus_id, sizeof bus_id, device_index) != cudaSuccess) {
    (void)cudaGetLastError();
    return nullptr;
  }
  NvmlDevice device = nullptr;
  return n->handle_by_pci_bus_id(bus_id, &device) == 0 ? device : nullptr;
}

void telemetry_read(void* source, CaiTelemetry* out) {
  const Nvml* n = nvml();
  if (!n || !source) return;
  unsigned value = 0;
  if (n->temperature(source, kNvmlTemperatureGpu, &value) == 0) {
    out->temperature_c = static_cast<float>(value);
    out->valid |= CAI_TELEMETRY_TEMPERATURE;
  }
  if (n->clock(source, kNvmlClockSm, &value) == 0) {
    out->clock_mhz = static_cast<float>(value);
    out->valid |= CAI_TELEMETRY_CLOCK;
  }
  NvmlUtilization util{};
  if (n->utilization(source, &util) == 0) {
    out->utilization = static_cast<float>(util.gpu) / 100.0f;
    out->valid |= CAI_TELEMETRY_UTILIZATION;
  }
  if (n->power_mw(source, &value) == 0) {
    out->power_w = static_cast<float>(value) / 1000.0f;
    out->valid |= CAI_TELEMETRY_POWER;
  }
}

}  // namespace cai::gpu

#endif  // CAI_GPU_CUDA
