// Streaming-read probe: each thread sums its slice of a large buffer with wide independent accumulators.
#include "core/membw.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstring>
#include <vector>

#include "core/thread_pool.h"

namespace cai {

namespace {

uint64_t sum_slice(const uint64_t* p, int64_t n) {
  uint64_t a0 = 0, a1 = 0, a2 = 0, a3 = 0, a4 = 0, a5 = 0, a6 = 0, a7 = 0;
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) {
    a0 += p[i];
    a1 += p[i + 1];
    a2 += p[i + 2];
    a3 += p[i + 3];
    a4 += p[i + 4];
    a5 += p[i + 5];
    a6 += p[i + 6];
    a7 += p[i + 7];
  }
  for (; i < n; ++i) a0 += p[i];
  return a0 + a1 + a2 + a3 + a4 + a5 + a6 + a7;
}

}  // namespace

double measure_read_bandwidth_gbps(ThreadPool* pool, size_t bytes, int repeats) {
  const int64_t n = static_cast<int64_t>(bytes / sizeof(uint64_t));
  std::vector<uint64_t> buf(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) buf[static_cast<size_t>(i)] = static_cast<uint64_t>(i);  // fault pages in
  std::atomic<uint64_t> sink{0};
  double best = 0;
  for (int r = 0; r < repeats; ++r) {
    const auto t0 = std::chrono::steady_clock::now();
    auto body = [&](int64_t b, int64_t e) { sink += sum_slice(buf.data() + b, e - b); };
    if (pool)
      pool->parallel_for(n, 1 << 16, body);
    else
      body(0, n);
    const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    best = std::max(best, static_cast<double>(bytes) / s / 1e9);
  }
  if (sink.load() == 42) std::memset(buf.data(), 0, 8);  // keep the sums observable
  return best;
}

}  // namespace cai
