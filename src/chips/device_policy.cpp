// The profile of the device a verb runs on, and the generic options its policies fill in.
#include "chips/device_policy.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <cstdlib>

namespace cai::chips {

Result<ProfileChoice> profile_for_device(const DetectReport& report, const std::vector<DeviceProfile>& profiles,
                                         const std::string& device_name, const std::string& override_id) {
  if (!override_id.empty()) {
    if (const DeviceProfile* p = find_profile(profiles, override_id))
      return ProfileChoice{p, "--profile " + override_id};
    std::vector<std::string> ids;
    for (const DeviceProfile& p : profiles) ids.push_back(p.id);
    return not_found("--profile {}: no such device profile (known: {})", override_id, fmt::join(ids, ", "));
  }
  const size_t colon = device_name.find(':');
  const std::string backend = device_name.substr(0, colon);
  if (backend == "cpu") {
    if (const DeviceProfile* p = find_profile(profiles, report.cpu.profile))
      return ProfileChoice{p, fmt::format("the host CPU ({})", report.cpu.arch)};
    return ProfileChoice{nullptr, fmt::format("no profile for a {} CPU", report.cpu.arch)};
  }
  const int index = colon == std::string::npos ? 0 : std::atoi(device_name.c_str() + colon + 1);
  int seen = 0;
  for (const Accelerator& a : report.accelerators) {
    if (a.match.backend != backend || seen++ != index) continue;
    const std::string where =
        fmt::format("PCI {}: accelerator #{} served by {}, in PCI address order", a.pci.address, index, backend);
    if (!a.match.profile) return ProfileChoice{nullptr, where + "; " + a.match.reason};
    return ProfileChoice{a.match.profile, where};
  }
  return ProfileChoice{
      nullptr, fmt::format("no recognised PCI accelerator is served by the {} backend for {}", backend, device_name)};
}

std::vector<std::string> apply_policies(const ChipPolicies& p, PolicyOptions& o) {
  std::vector<std::string> lines;
  if (!p.kv_dtype.empty()) {
    if (o.kv_dtype)
      lines.push_back(fmt::format("kv_dtype {}: not applied, --kv-dtype {} given", p.kv_dtype, *o.kv_dtype));
    else
      lines.push_back(fmt::format("kv_dtype {}: applied", *(o.kv_dtype = p.kv_dtype)));
  }
  if (o.prewarm_experts)
    lines.push_back(fmt::format("expert_prewarm {}: not applied, --prewarm-experts={} given", p.expert_prewarm,
                                *o.prewarm_experts));
  else
    lines.push_back(fmt::format("expert_prewarm {}: applied", *(o.prewarm_experts = p.expert_prewarm)));
  if (p.thermal_limit_c) {
    if (!o.has_engine)
      lines.push_back(
          fmt::format("thermal_limit_c {}: no effect (this verb runs no serving engine)", *p.thermal_limit_c));
    else if (o.thermal_limit_c)
      lines.push_back(fmt::format("thermal_limit_c {}: not applied, --thermal-limit {} given", *p.thermal_limit_c,
                                  *o.thermal_limit_c));
    else
      lines.push_back(
          fmt::format("thermal_limit_c {}: applied", *(o.thermal_limit_c = static_cast<float>(*p.thermal_limit_c))));
  }
  if (p.host_offload_below) {
    if (!o.has_engine)
      lines.push_back(
          fmt::format("host_offload_below {}: no effect (this verb runs no serving engine)", *p.host_offload_below));
    else if (o.kv_offload_layers)
      lines.push_back(fmt::format("host_offload_below {}: not applied, --kv-offload-layers {} given",
                                  *p.host_offload_below, *o.kv_offload_layers));
    else
      lines.push_back(
          fmt::format("host_offload_below {}: applied (KV layers the device cannot hold go to host memory, "
                      "as `cai plan` plans them)",
                      *(o.host_offload_below = p.host_offload_below)));
  }
  if (!p.pool_length_buckets.empty())
    lines.push_back(fmt::format("pool_length_buckets [{}]: no effect yet (one pool for every length)",
                                fmt::join(p.pool_length_buckets, ", ")));
  if (p.sync_launch) lines.push_back("sync_launch: no effect yet (launches stay asynchronous)");
  return lines;
}

}  // namespace cai::chips
