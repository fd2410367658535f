// seconds_since: wall-clock seconds from a steady_clock time point to now (timing in benchmarks and logs).
#pragma once

#include <chrono>

namespace cai {

inline double seconds_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

}  // namespace cai
