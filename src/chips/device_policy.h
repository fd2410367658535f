// Which profile describes the device a verb runs on, and the options its policies supply where the user set none.
// One code path for every chip: the policies are data (data/chips/*.json), applied here to the generic options.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "chips/detect.h"
#include "chips/device_profile.h"

namespace cai::chips {

struct ProfileChoice {
  const DeviceProfile* profile = nullptr;  // null: no profile describes the device
  std::string reason;                      // one line for the log
};
// `device_name` is a Registry device ("cpu:0", "cuda:1"). The CPU gets the CPU's profile (cpu-x86-64, cpu-arm64); a
// plugin device "<backend>:<i>" the profile of the i-th accelerator, in PCI address order, whose profile that backend
// serves. `override_id` (--profile) wins over detection; an unknown id is not_found, listing the known ones.
Result<ProfileChoice> profile_for_device(const DetectReport& report, const std::vector<DeviceProfile>& profiles,
                                         const std::string& device_name, const std::string& override_id = "");

// Options a profile's policies map onto. Unset = the user gave none; apply_policies fills those it can.
struct PolicyOptions {
  std::optional<std::string> kv_dtype;   // --kv-dtype
  std::optional<bool> prewarm_experts;   // --prewarm-experts
  std::optional<float> thermal_limit_c;  // --thermal-limit (serving verbs)
  std::optional<int> kv_offload_layers;  // --kv-offload-layers (serving verbs)
  // Filled from the profile for a serving verb the user gave no --kv-offload-layers: the host KV tier takes the layers
  // the planner puts in host memory when the device's free memory is below this fraction of the KV cache's need.
  std::optional<double> host_offload_below;
  bool has_engine = false;  // the verb runs a serving engine (thermal limits and offload apply)
};
// Fills the unset options from `p` and returns one line per policy saying what happened: applied, the user's value
// kept, or no effect yet (a policy no code consumes so far: pool buckets, synchronous launch).
std::vector<std::string> apply_policies(const ChipPolicies& p, PolicyOptions& o);

}  // namespace cai::chips
