// Memory bandwidth of a device measured through its own ops: the roofline denominator `cai bench --device` reports.
#pragma once

#include "core/status.h"
#include "hal/hal.h"

namespace cai::ops {

// Best of `repeats` timed `add` ops over `bytes`-sized F32 buffers on the device (each moves 3 × bytes: two reads,
// one write), synchronized with the host around each. Returns GB/s of device memory traffic.
Result<double> measure_device_bandwidth_gbps(hal::Device& d, size_t bytes = size_t(256) << 20, int repeats = 5);

}  // namespace cai::ops
