// RecentLatencies: the latencies observed over the last minutes (time to first token, time per output token), and
// their percentiles over that window, for the dashboard (/v1/status); /metrics keeps the cumulative histograms.
#pragma once

#include <cstdint>
#include <deque>
#include <vector>

namespace cai::server {

struct LatencySummary {
  uint64_t count = 0;  // observations in the window (a TPOT observation counts its tokens)
  double p50 = 0, p90 = 0, p99 = 0, max = 0;
};

class RecentLatencies {
 public:
  // Keeps what was observed in the last window_s seconds, at most max_entries observations (the oldest go first).
  explicit RecentLatencies(double window_s = 300, size_t max_entries = 65536)
      : window_s_(window_s), max_entries_(max_entries) {}
  // `value` seconds, `n` times, observed at `now` (seconds on a steady clock).
  void observe(double now, double value, uint64_t n = 1);
  // Percentiles of the observations of the window ending at `now` (nearest rank, each weighted by its n).
  LatencySummary summary(double now);
  double window_seconds() const { return window_s_; }

 private:
  struct Entry {
    double t, value;
    uint64_t n;
  };
  void forget_before(double now);

  double window_s_;
  size_t max_entries_;
  std::deque<Entry> entries_;
};

}  // namespace cai::server
