// Device telemetry on HIP (AMD Instinct, Hygon DCU): the ROCm SMI library (librocm_smi64.so) opened with dlopen at
// run time, so that no ROCm SMI header or link-time library is needed; without it there are no readings, and no error.
#include "hal/cuda/backend/gpu_device.h"

#if defined(CAI_GPU_HIP)
#include <dlfcn.h>

#include "hal/cuda/backend/dl_symbol.h"

#include <cstdio>
#include <cstring>
#include <optional>

namespace cai::gpu {

namespace {

// The few ROCm SMI calls used, declared here. Every call returns 0 (RSMI_STATUS_SUCCESS) on success; devices are
// numbered by ROCm SMI's own index.
constexpr unsigned kTempJunction = 1;  // RSMI_TEMP_TYPE_JUNCTION: the hotspot, which the firmware throttles on
constexpr unsigned kTempEdge = 0;      // RSMI_TEMP_TYPE_EDGE: older boards report only this one
constexpr int kTempCurrent = 0;        // RSMI_TEMP_CURRENT
constexpr int kClockSys = 0;           // RSMI_CLK_TYPE_SYS: the compute (shader) clock

struct RocmSmi {
  int (*init)(uint64_t flags);
  int (*num_devices)(uint32_t*);
  int (*pci_id)(uint32_t, uint64_t*);  // BDFID: domain << 32 | partition << 28 | bus << 8 | device << 3 | function
  int (*temperature)(uint32_t, uint32_t, int, int64_t*);  // millidegrees Celsius
  int (*clock)(uint32_t, int, void*);                     // rsmi_frequencies_t, whose layout varies (see below)
  int (*busy_percent)(uint32_t, uint32_t*);
  int (*power_ave)(uint32_t, uint32_t, uint64_t*);  // microwatts
};

// Loaded and initialised once per process; null when the library is missing or fails to start.
const RocmSmi* rocm_smi() {
  static const RocmSmi* loaded = []() -> const RocmSmi* {
    void* lib = dlopen("librocm_smi64.so.1", RTLD_NOW | RTLD_LOCAL);
    if (!lib) lib = dlopen("librocm_smi64.so", RTLD_NOW | RTLD_LOCAL);
    if (!lib) return nullptr;
    static RocmSmi r{};
    const bool ok = load_symbol(lib, "rsmi_init", &r.init) &&
                    load_symbol(lib, "rsmi_num_monitor_devices", &r.num_devices) &&
                    load_symbol(lib, "rsmi_dev_pci_id_get", &r.pci_id) &&
                    load_symbol(lib, "rsmi_dev_temp_metric_get", &r.temperature) &&
                    load_symbol(lib, "rsmi_dev_gpu_clk_freq_get", &r.clock) &&
                    load_symbol(lib, "rsmi_dev_busy_percent_get", &r.busy_percent) &&
                    load_symbol(lib, "rsmi_dev_power_ave_get", &r.power_ave);
    if (!ok || r.init(0) != 0) {
      dlclose(lib);
      return nullptr;
    }
    return &r;
  }();
  return loaded;
}

// ROCm SMI's index of the device at HIP's PCI bus id, as a handle (index + 1, so that null means none).
uintptr_t handle_of(const RocmSmi& r, const char* bus_id) {
  unsigned domain = 0, bus = 0, dev = 0, fn = 0;
  if (std::sscanf(bus_id, "%x:%x:%x.%x", &domain, &bus, &dev, &fn) != 4) return 0;
  const uint64_t want = uint64_t{domain} << 32 | bus << 8 | dev << 3 | fn;
  uint32_t n = 0;
  if (r.num_devices(&n) != 0) return 0;
  for (uint32_t i = 0; i < n; ++i) {
    uint64_t bdfid = 0;
    // Newer releases put a partition id in bits 28..31; a whole device is partition 0 of its own bus address.
    if (r.pci_id(i, &bdfid) == 0 && (bdfid & ~(uint64_t{0xf} << 28)) == want) return uintptr_t{i} + 1;
  }
  return 0;
}

bool plausible_hz(uint64_t hz) { return hz >= 10'000'000 && hz <= 10'000'000'000ULL; }

// rsmi_frequencies_t is {uint32 num_supported, uint32 current, uint64 frequency[N]} in older ROCm and gained a
// leading bool has_deep_sleep (shifting everything) in newer releases, with N = 32 or 33. The call writes into an
// oversized zeroed buffer and the current clock is taken from whichever layout is self-consistent: a count of at
// most 33, a current index below it, and a frequency in the range of real shader clocks.
std::optional<float> current_clock_mhz(const RocmSmi& r, uint32_t index) {
  alignas(8) unsigned char buf[1024] = {};
  if (r.clock(index, kClockSys, buf) != 0) return std::nullopt;
  auto u32 = [&](size_t off) {
    uint32_t v;
    std::memcpy(&v, buf + off, 4);
    return v;
  };
  auto u64 = [&](size_t off) {
    uint64_t v;
    std::memcpy(&v, buf + off, 8);
    return v;
  };
  for (const size_t counts : {size_t{4}, size_t{0}}) {  // newer layout first: counts at 4, frequencies at 16
    const uint32_t n = u32(counts), cur = u32(counts + 4);
    const size_t freqs = counts == 4 ? 16 : 8;
    if (n >= 1 && n <= 33 && cur < n && plausible_hz(u64(freqs + 8 * cur)))
      return static_cast<float>(u64(freqs + 8 * cur) / 1e6);
  }
  return std::nullopt;
}

}  // namespace

void* telemetry_open(int device_index) {
  const RocmSmi* r = rocm_smi();
  if (!r) return nullptr;
  char bus_id[32];
  if (hipDeviceGetPCIBusId(bus_id, sizeof bus_id, device_index) != hipSuccess) {
    (void)hipGetLastError();
    return nullptr;
  }
  return reinterpret_cast<void*>(handle_of(*r, bus_id));
}

void telemetry_read(void* source, CaiTelemetry* out) {
  const RocmSmi* r = rocm_smi();
  if (!r || !source) return;
  const uint32_t index = static_cast<uint32_t>(reinterpret_cast<uintptr_t>(source) - 1);
  int64_t milli = 0;
  if (r->temperature(index, kTempJunction, kTempCurrent, &milli) == 0 ||
      r->temperature(index, kTempEdge, kTempCurrent, &milli) == 0) {
    out->temperature_c = static_cast<float>(milli) / 1000.0f;
    out->valid |= CAI_TELEMETRY_TEMPERATURE;
  }
  if (const std::optional<float> mhz = current_clock_mhz(*r, index)) {
    out->clock_mhz = *mhz;
    out->valid |= CAI_TELEMETRY_CLOCK;
  }
  uint32_t busy = 0;
  if (r->busy_percent(index, &busy) == 0) {
    out->utilization = static_cast<float>(busy) / 100.0f;
    out->valid |= CAI_TELEMETRY_UTILIZATION;
  }
  uint64_t microwatts = 0;
  if (r->power_ave(index, 0, &microwatts) == 0) {
    out->power_w = static_cast<float>(microwatts) / 1e6f;
    out->valid |= CAI_TELEMETRY_POWER;
  }
}

}  // namespace cai::gpu

#endif  // CAI_GPU_HIP
