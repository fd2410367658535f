// Device bandwidth probe: three buffers on the device, `add` timed between stream synchronizations.
#include "ops/device_bandwidth.h"

#include <algorithm>
#include <chrono>
#include <vector>

#include "ops/ops.h"

namespace cai::ops {

Result<double> measure_device_bandwidth_gbps(hal::Device& d, size_t bytes, int repeats) {
  const int64_t n = static_cast<int64_t>(bytes / sizeof(float));
  std::vector<hal::Buffer> bufs;
  std::vector<TensorView> views;
  for (int i = 0; i < 3; ++i) {
    CAI_ASSIGN_OR_RETURN(hal::Buffer b, d.allocate(static_cast<size_t>(n) * sizeof(float)));
    TensorView v = TensorView::make(b.data(), DType::kF32, {n});
    v.device = &d;
    views.push_back(v);
    bufs.push_back(std::move(b));
  }
  hal::Stream& s = d.default_stream();
  CAI_TRY(ops::add(d, views[0], views[1], views[2]));  // first touch, not timed
  CAI_TRY(s.synchronize());
  double best = 0;
  for (int r = 0; r < std::max(1, repeats); ++r) {
    const auto t0 = std::chrono::steady_clock::now();
    CAI_TRY(ops::add(d, views[0], views[1], views[2]));
    CAI_TRY(s.synchronize());
    const double sec = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    best = std::max(best, 3.0 * static_cast<double>(n) * sizeof(float) / sec / 1e9);
  }
  return best;
}

}  // namespace cai::ops
