// PCI scan, profile matching, vendor runtime probes and the CAI backend list: the body of `cai detect`.
#include "chips/detect.h"

#include <dlfcn.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>

#include <fmt/format.h>
#include <fmt/ranges.h>

namespace cai::chips {

namespace {

namespace fs = std::filesystem;

// A sysfs attribute such as "0x10de\n" as a number; nothing when absent or malformed.
std::optional<uint32_t> read_hex_attr(const fs::path& path) {
  std::ifstream in(path);
  std::string s;
  if (!(in >> s) || s.size() < 3 || s.size() > 10 || s[0] != '0' || (s[1] != 'x' && s[1] != 'X')) return std::nullopt;
  char* end = nullptr;
  const unsigned long v = std::strtoul(s.c_str() + 2, &end, 16);
  if (*end != '\0') return std::nullopt;
  return static_cast<uint32_t>(v);
}

// Display controllers (0x03xx) and processing accelerators (0x12xx): the classes an unprofiled card may have.
bool is_accelerator_class(uint32_t class_code) {
  const uint32_t base = class_code >> 16;
  return base == 0x03 || base == 0x12;
}

// Class codes compare on base class and subclass; the programming interface byte varies by board.
bool class_matches(uint32_t profile_class, uint32_t device_class) {
  return (profile_class >> 8) == (device_class >> 8);
}

// `kVendor` fallback: every profile of this vendor names the same non-empty backend ("" otherwise).
std::string vendor_backend(uint16_t vendor, const std::vector<DeviceProfile>& profiles) {
  std::string backend;
  for (const DeviceProfile& p : profiles) {
    if (p.pci_vendor_id != vendor) continue;
    if (p.policies.backend.empty() || (!backend.empty() && backend != p.policies.backend)) return "";
    backend = p.policies.backend;
  }
  return backend;
}

std::string pci_id(const PciDevice& d) { return fmt::format("{:#06x}:{:#06x}", d.vendor_id, d.device_id); }

}  // namespace

std::vector<PciDevice> scan_pci(const std::string& sysfs_root) {
  std::vector<PciDevice> out;
  std::error_code ec;
  for (const auto& ent : fs::directory_iterator(fs::path(sysfs_root) / "bus" / "pci" / "devices", ec)) {
    const auto vendor = read_hex_attr(ent.path() / "vendor");
    const auto device = read_hex_attr(ent.path() / "device");
    const auto cls = read_hex_attr(ent.path() / "class");
    if (!vendor || !device || *vendor > 0xffff || *device > 0xffff) continue;
    out.push_back({ent.path().filename().string(), static_cast<uint16_t>(*vendor), static_cast<uint16_t>(*device),
                   cls.value_or(0) & 0xffffff});
  }
  std::sort(out.begin(), out.end(), [](const auto& a, const auto& b) { return a.address < b.address; });
  return out;
}

const char* match_kind_name(MatchKind k) {
  switch (k) {
    case MatchKind::kDeviceId: return "device_id";
    case MatchKind::kClass: return "class";
    case MatchKind::kVendor: return "vendor";
  }
  return "?";
}

std::optional<PciMatch> match_device(const PciDevice& dev, const std::vector<DeviceProfile>& profiles) {
  std::vector<const DeviceProfile*> by_id, by_class;
  auto class_fits = [&](const DeviceProfile& p) { return !p.pci_class || class_matches(*p.pci_class, dev.class_code); };
  for (const DeviceProfile& p : profiles) {
    if (p.pci_vendor_id != dev.vendor_id) continue;
    const auto& ids = p.pci_device_ids;
    if (!ids.empty()) {
      // A listed id matches whatever class the function reports: AMD-derived boards (Hygon DCUs) may report a display
      // controller (0x0380) where the profile names a co-processor.
      if (std::find(ids.begin(), ids.end(), dev.device_id) != ids.end()) by_id.push_back(&p);
    } else if (p.pci_class ? class_fits(p) : is_accelerator_class(dev.class_code)) {
      by_class.push_back(&p);  // no ids: the profile's class, or any accelerator class of this vendor
    }
  }
  // Among id matches, the class breaks ties: those whose class fits too come first.
  std::stable_partition(by_id.begin(), by_id.end(), [&](const DeviceProfile* p) { return class_fits(*p); });
  const auto& hits = by_id.empty() ? by_class : by_id;
  if (hits.empty()) {
    if (!is_accelerator_class(dev.class_code)) return std::nullopt;
    std::string backend = vendor_backend(dev.vendor_id, profiles);
    if (backend.empty()) return std::nullopt;
    return PciMatch{nullptr,
                    {},
                    MatchKind::kVendor,
                    backend,
                    fmt::format("{} has no profile; its vendor's cards use the {} backend", pci_id(dev), backend)};
  }
  PciMatch m;
  m.profile = hits.front();
  m.kind = by_id.empty() ? MatchKind::kClass : MatchKind::kDeviceId;
  m.backend = m.profile->policies.backend;
  for (size_t i = 1; i < hits.size(); ++i) m.alternatives.push_back(hits[i]->id);
  const char* how = m.kind == MatchKind::kDeviceId ? "device id" : "class";
  if (m.kind == MatchKind::kDeviceId && !class_fits(*m.profile)) {
    m.reason = fmt::format("{} matches {} by device id; its PCI class 0x{:06x} is not the profile's 0x{:06x}",
                           pci_id(dev), m.profile->id, dev.class_code, *m.profile->pci_class);
    if (!m.alternatives.empty()) m.reason += fmt::format(" (also fits: {})", fmt::join(m.alternatives, ", "));
  } else if (m.alternatives.empty()) {
    m.reason = fmt::format("{} matches {} by {}", pci_id(dev), m.profile->id, how);
  } else {
    m.reason =
        fmt::format("{} matches {} profiles by {} ({}, {}); sysfs does not tell them apart, so the first is shown",
                    pci_id(dev), hits.size(), how, m.profile->id, fmt::join(m.alternatives, ", "));
  }
  return m;
}

LibraryProbe probe_library(const std::string& name) {
  LibraryProbe p{name, false, ""};
  dlerror();
  // A runtime that loads stays loaded: vendor runtimes start threads and allocate in their constructors, and some
  // leak or crash when unloaded (HIP's leaks 408 bytes per dlclose), while the backend plugin loads it again anyway.
  if (dlopen(name.c_str(), RTLD_LAZY | RTLD_LOCAL)) {
    p.loaded = true;
  } else if (const char* err = dlerror()) {
    p.error = err;
  }
  return p;
}

DetectOptions DetectOptions::from_env() {
  DetectOptions o;
  if (const char* s = std::getenv("CAI_SYSFS_ROOT"); s && *s) o.sysfs_root = s;
  if (const char* s = std::getenv("CAI_PROC_ROOT"); s && *s) o.proc_root = s;
  return o;
}

namespace {

// The runtime libraries to probe: the profile's, or for a vendor-only match those of every profile of the vendor.
std::vector<std::string> runtime_libraries(const PciDevice& dev, const PciMatch& m,
                                           const std::vector<DeviceProfile>& profiles) {
  if (m.profile) return m.profile->runtime_libraries;
  std::vector<std::string> libs;
  for (const DeviceProfile& p : profiles)
    if (p.pci_vendor_id == dev.vendor_id)
      for (const std::string& l : p.runtime_libraries)
        if (std::find(libs.begin(), libs.end(), l) == libs.end()) libs.push_back(l);
  return libs;
}

}  // namespace

DetectReport detect(const std::vector<DeviceProfile>& profiles, const hal::Registry& registry,
                    const DetectOptions& options) {
  DetectReport r;
  r.cpu = describe_cpu(options.proc_root, options.sysfs_root);
  for (const auto& b : registry.backends()) {
    BackendInfo info{b->name(), {}, b->runtime()};
    for (hal::Device* d : b->devices()) {
      const hal::MemoryInfo mem = d->memory_info();
      info.devices.push_back({d->name(), d->description(), mem.total_bytes, mem.free_bytes});
    }
    r.backends.push_back(std::move(info));
  }
  std::map<std::string, LibraryProbe> probed;  // each library once, however many cards need it
  for (const PciDevice& dev : scan_pci(options.sysfs_root)) {
    std::optional<PciMatch> m = match_device(dev, profiles);
    if (!m) continue;
    Accelerator a{dev, std::move(*m), {}, false, false, false};
    const std::vector<std::string> libs = runtime_libraries(dev, a.match, profiles);
    for (const std::string& lib : libs) {
      auto it = probed.find(lib);
      if (it == probed.end()) it = probed.emplace(lib, options.probe(lib)).first;
      a.runtime.push_back(it->second);
    }
    a.runtime_available =
        libs.empty() || std::any_of(a.runtime.begin(), a.runtime.end(), [](const auto& p) { return p.loaded; });
    a.backend_loaded = !a.match.backend.empty() && registry.find_backend(a.match.backend) != nullptr;
    a.backend_available = a.backend_loaded && a.runtime_available;
    r.accelerators.push_back(std::move(a));
  }
  return r;
}

}  // namespace cai::chips
