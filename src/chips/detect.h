// What hardware this host has: PCI accelerators matched to device profiles, their vendor runtimes (dlopen probes),
// the CAI backends loaded in the HAL registry, and the CPU. Every path root is movable so tests run on fixture trees.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "chips/device_profile.h"
#include "hal/hal.h"

namespace cai::chips {

struct PciDevice {
  std::string address;  // "0000:17:00.0"
  uint16_t vendor_id = 0;
  uint16_t device_id = 0;
  uint32_t class_code = 0;  // 24-bit: base class, subclass, programming interface
};

// Every <sysfs_root>/bus/pci/devices/*/{vendor,device,class}, sorted by address; unreadable entries are skipped.
std::vector<PciDevice> scan_pci(const std::string& sysfs_root);

// How a PCI device was matched to a profile.
enum class MatchKind : uint8_t {
  kDeviceId,  // vendor and device id (and class, where the profile names one)
  kClass,     // vendor and class; the profile lists no device ids
  kVendor,    // an accelerator-class device of a vendor whose profiles all name one backend, but no profile of its own
};
const char* match_kind_name(MatchKind k);

struct PciMatch {
  const DeviceProfile* profile = nullptr;  // null for kVendor
  std::vector<std::string> alternatives;   // other profiles that fit equally well
  MatchKind kind = MatchKind::kDeviceId;
  std::string backend;  // the backend plugin that would serve it ("" = none yet)
  std::string reason;   // one line: why this profile (or none)
};
// The best profile for one device, or nothing when the device is not an accelerator CAI knows. Device-id matches win
// over class matches; ties go to the first id in `profiles` (sorted), the others listed as alternatives.
std::optional<PciMatch> match_device(const PciDevice& dev, const std::vector<DeviceProfile>& profiles);

struct LibraryProbe {
  std::string name;
  bool loaded = false;
  std::string error;  // dlerror() when not loaded
};
// dlopen(name, RTLD_LAZY | RTLD_LOCAL); a library that loads is kept loaded (see detect.cpp).
LibraryProbe probe_library(const std::string& name);

struct Accelerator {
  PciDevice pci;
  PciMatch match;
  std::vector<LibraryProbe> runtime;  // one probe per runtime library of the profile (or of the vendor's profiles)
  bool runtime_available = false;     // any of them loaded (or the profile names none)
  bool backend_loaded = false;        // the backend is registered in the HAL registry
  bool backend_available = false;     // backend named, loaded, and its runtime present
};

struct CpuInfo {
  // "Intel(R) Xeon(R) ..."; on AArch64 the core's name from its MIDR ("HiSilicon Kunpeng 920 (TaiShan v110 cores)"),
  // or "aarch64 implementer 0x41 part 0xd0c" for a core CAI does not know.
  std::string model;
  std::string arch;  // "x86_64", "aarch64"
  int logical_cores = 0;
  std::string isa_level;              // "x86-64-v3", "x86-64-v4", "aarch64"
  std::vector<std::string> features;  // notable extras: avx512_vnni, amx_int8, asimddp, sve, ...
  int numa_nodes = 1;
  uint64_t memory_bytes = 0;  // MemTotal
  double mhz = 0;             // the first core's "cpu MHz" (x86; 0 where cpuinfo has none, as on most AArch64)
  std::string profile;        // "cpu-x86-64", "cpu-arm64", or a core's own ("cpu-kunpeng-920")
};
// From <proc_root>/cpuinfo, <proc_root>/meminfo and <sysfs_root>/devices/system/node/node*.
CpuInfo describe_cpu(const std::string& proc_root, const std::string& sysfs_root);

struct BackendDevice {
  std::string name;
  std::string description;
  uint64_t memory_total_bytes = 0;
  uint64_t memory_free_bytes = 0;
};
struct BackendInfo {
  std::string name;
  std::vector<BackendDevice> devices;
  std::string runtime;  // hal::Backend::runtime(): where it comes from, with its runtime's and driver's versions
};

struct DetectOptions {
  std::string sysfs_root = "/sys";
  std::string proc_root = "/proc";
  std::function<LibraryProbe(const std::string&)> probe = probe_library;
  // $CAI_SYSFS_ROOT and $CAI_PROC_ROOT where set.
  static DetectOptions from_env();
};

struct DetectReport {
  CpuInfo cpu;
  std::vector<Accelerator> accelerators;
  std::vector<BackendInfo> backends;
};
// Scans, matches and probes. `registry` supplies the loaded backends (plugins are the caller's to load).
DetectReport detect(const std::vector<DeviceProfile>& profiles, const hal::Registry& registry,
                    const DetectOptions& options);

}  // namespace cai::chips
