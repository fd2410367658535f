// Renders a DetectReport as JSON or a table, and picks the `--device auto` device from it.
#include "chips/detect_report.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

namespace cai::chips {

namespace {

using OJson = nlohmann::ordered_json;

double gib(uint64_t bytes) { return static_cast<double>(bytes) / (1024.0 * 1024.0 * 1024.0); }

// Why an accelerator cannot be used, or "" when it can.
std::string unavailable_reason(const Accelerator& a) {
  if (a.match.backend.empty()) return "CAI has no backend for this chip yet";
  if (!a.backend_loaded)
    return fmt::format("backend '{}' not loaded (no libcai-backend-{}.so found)", a.match.backend, a.match.backend);
  if (!a.runtime_available) {
    std::vector<std::string> names;
    for (const auto& p : a.runtime) names.push_back(p.name);
    return fmt::format("vendor runtime missing ({})", fmt::join(names, ", "));
  }
  return "";
}

OJson cpu_json(const CpuInfo& c) {
  return OJson{{"model", c.model},
               {"arch", c.arch},
               {"logical_cores", c.logical_cores},
               {"isa_level", c.isa_level},
               {"features", c.features},
               {"numa_nodes", c.numa_nodes},
               {"memory_bytes", c.memory_bytes},
               {"profile", c.profile}};
}

OJson accelerator_json(const Accelerator& a) {
  OJson runtime = OJson::array();
  for (const LibraryProbe& p : a.runtime) runtime.push_back({{"library", p.name}, {"loaded", p.loaded}});
  const DeviceProfile* p = a.match.profile;
  OJson j{{"pci_address", a.pci.address},
          {"vendor_id", hex_id(a.pci.vendor_id, 4)},
          {"device_id", hex_id(a.pci.device_id, 4)},
          {"class", hex_id(a.pci.class_code, 6)},
          {"profile", p ? OJson(p->id) : OJson()},
          {"name", p ? OJson(p->name) : OJson()},
          {"memory_gib", p && p->memory_gib ? OJson(*p->memory_gib) : OJson()},
          {"match", match_kind_name(a.match.kind)},
          {"alternatives", a.match.alternatives},
          {"reason", a.match.reason},
          {"backend", a.match.backend},
          {"backend_loaded", a.backend_loaded},
          {"runtime", runtime},
          {"backend_available", a.backend_available}};
  if (const std::string why = unavailable_reason(a); !why.empty()) j["unavailable_reason"] = why;
  return j;
}

}  // namespace

std::string hex_id(uint32_t value, int digits) { return fmt::format("0x{:0{}x}", value, digits); }

nlohmann::ordered_json report_json(const DetectReport& r) {
  OJson accels = OJson::array(), backends = OJson::array();
  for (const Accelerator& a : r.accelerators) accels.push_back(accelerator_json(a));
  for (const BackendInfo& b : r.backends) {
    OJson devs = OJson::array();
    for (const BackendDevice& d : b.devices)
      devs.push_back({{"name", d.name},
                      {"description", d.description},
                      {"memory_total_bytes", d.memory_total_bytes},
                      {"memory_free_bytes", d.memory_free_bytes}});
    backends.push_back({{"name", b.name}, {"runtime", b.runtime}, {"devices", devs}});
  }
  return OJson{{"cpu", cpu_json(r.cpu)}, {"accelerators", accels}, {"backends", backends}};
}

std::string report_table(const DetectReport& r) {
  const CpuInfo& c = r.cpu;
  std::string out = fmt::format("CPU: {} ({}, {}{}), {} logical cores, {} NUMA node(s), {:.1f} GiB\n",
                                c.model.empty() ? "unknown" : c.model, c.arch.empty() ? "unknown arch" : c.arch,
                                c.isa_level.empty() ? "?" : c.isa_level,
                                c.features.empty() ? "" : fmt::format(" +{}", fmt::join(c.features, " +")),
                                c.logical_cores, c.numa_nodes, gib(c.memory_bytes));
  if (r.accelerators.empty()) {
    out += "Accelerators: none recognised on PCI\n";
  } else {
    out += fmt::format("Accelerators ({}):\n  {:<13} {:<10} {:<20} {:<8} {}\n", r.accelerators.size(), "PCI", "ID",
                       "PROFILE", "BACKEND", "AVAILABLE");
    for (const Accelerator& a : r.accelerators) {
      const std::string why = unavailable_reason(a);
      out += fmt::format("  {:<13} {:04x}:{:04x}  {:<20} {:<8} {}\n", a.pci.address, a.pci.vendor_id, a.pci.device_id,
                         a.match.profile ? a.match.profile->id : "(none)",
                         a.match.backend.empty() ? "-" : a.match.backend, why.empty() ? "yes" : "no: " + why);
      if (!a.match.alternatives.empty() || !a.match.profile) out += "    " + a.match.reason + "\n";
    }
  }
  out += "CAI backends:\n";
  for (const BackendInfo& b : r.backends) {
    if (!b.runtime.empty()) out += fmt::format("  {} backend: {}\n", b.name, b.runtime);
    if (b.devices.empty()) out += fmt::format("  {}: no devices\n", b.name);
    for (const BackendDevice& d : b.devices)
      out += fmt::format("  {}: {}, {:.1f} GiB\n", d.name, d.description, gib(d.memory_total_bytes));
  }
  return out;
}

AutoDevice choose_auto_device(const DetectReport& r) {
  const BackendDevice* best = nullptr;
  std::vector<std::string> skipped;
  for (const Accelerator& a : r.accelerators) {
    if (!a.backend_available) {
      skipped.push_back(fmt::format("{} ({}): {}", a.pci.address, a.match.profile ? a.match.profile->id : "no profile",
                                    unavailable_reason(a)));
      continue;
    }
    for (const BackendInfo& b : r.backends) {
      if (b.name != a.match.backend) continue;
      for (const BackendDevice& d : b.devices)
        if (!best || d.memory_total_bytes > best->memory_total_bytes) best = &d;
    }
  }
  if (best)
    return {best->name, fmt::format("{} ({}, {:.1f} GiB): the device with the most memory among available accelerator "
                                    "backends",
                                    best->name, best->description, gib(best->memory_total_bytes))};
  if (r.accelerators.empty()) return {"cpu", "no accelerator recognised on PCI"};
  if (skipped.empty()) return {"cpu", "the available accelerator backends report no devices"};
  return {"cpu", fmt::format("no usable accelerator: {}", fmt::join(skipped, "; "))};
}

}  // namespace cai::chips
