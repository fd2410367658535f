// The chip profile a `cai plan` or `cai bench --save-profile` works with: a profile id (or a unique part of it), a
// profile file, or this host's CPU with its memory and a read bandwidth measured now.
#pragma once

#include <optional>
#include <string>

#include "chips/device_profile.h"
#include "core/status.h"

namespace cai::cli {

// An exact profile id, else the one id that contains `name` ("h200" → "nvidia-h200-sxm"); a name ending in ".json" is
// a profile file (what `cai bench --save-profile` writes).
Result<chips::DeviceProfile> resolve_chip(const std::string& name);
// This machine's CPU as the card: its CPU profile (as `cai detect` matches it, or `profile` when given), with the
// memory /proc/meminfo reports, the read bandwidth measured over `threads` threads (0 = all) by the probe `cai bench`
// uses (or `bandwidth_gbs` when given), and a nominal peak math rate in int8_tops: threads × the cpuinfo clock × the
// int8 multiply-adds ×2 two vector pipes issue per cycle (CAI's fast path quantizes activations to int8), which
// measured efficiencies are taken against. No clock in cpuinfo (most AArch64 hosts): no peak, no prefill estimate.
Result<chips::DeviceProfile> host_chip(int threads, std::optional<chips::DeviceProfile> profile = std::nullopt,
                                       std::optional<double> bandwidth_gbs = std::nullopt);

}  // namespace cai::cli
