// libFuzzer target: arbitrary bytes as a device profile (data/chips/<id>.json). parse_profile must answer with a
// profile or a Status naming the file, and a profile it accepts must keep the invariants the detector relies on.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>

#include "chips/device_profile.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  auto r = cai::chips::parse_profile(text, "fuzz.json");
  if (!r.ok()) {
    if (r.status().message().rfind("fuzz.json:", 0) != 0) std::abort();
    return 0;
  }
  const cai::chips::DeviceProfile& p = *r;
  if (p.id.empty() || p.vendor.empty() || p.name.empty()) std::abort();
  if (p.memory_gib && !(*p.memory_gib > 0)) std::abort();
  if ((!p.pci_device_ids.empty() || p.pci_class) && !p.pci_vendor_id) std::abort();
  if (p.pci_class && *p.pci_class > 0xffffff) std::abort();
  const auto& pol = p.policies;
  if (pol.host_offload_below && (*pol.host_offload_below < 0 || *pol.host_offload_below > 1)) std::abort();
  for (size_t i = 0; i < pol.pool_length_buckets.size(); ++i)
    if (pol.pool_length_buckets[i] <= 0 || (i > 0 && pol.pool_length_buckets[i] <= pol.pool_length_buckets[i - 1]))
      std::abort();
  return 0;
}
