// Memory read-bandwidth probe: the denominator of every roofline ratio CAI reports.
#pragma once

#include <cstddef>

namespace cai {

class ThreadPool;

// Best-of-`repeats` streaming read bandwidth in GB/s over a `bytes` buffer (should be >> last-level cache),
// using every thread of `pool` (or the caller's thread alone when pool is null).
double measure_read_bandwidth_gbps(ThreadPool* pool, size_t bytes = size_t(512) << 20, int repeats = 5);

}  // namespace cai
