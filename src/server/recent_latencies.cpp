// RecentLatencies: a time-ordered window of observations; percentiles by sorting a copy of the window.
#include "server/recent_latencies.h"

#include <algorithm>

namespace cai::server {

void RecentLatencies::observe(double now, double value, uint64_t n) {
  if (n == 0) return;
  forget_before(now);
  if (entries_.size() == max_entries_) entries_.pop_front();
  entries_.push_back({now, value, n});
}

void RecentLatencies::forget_before(double now) {
  while (!entries_.empty() && entries_.front().t < now - window_s_) entries_.pop_front();
}

LatencySummary RecentLatencies::summary(double now) {
  forget_before(now);
  LatencySummary s;
  if (entries_.empty()) return s;
  std::vector<Entry> sorted(entries_.begin(), entries_.end());
  std::sort(sorted.begin(), sorted.end(), [](const Entry& a, const Entry& b) { return a.value < b.value; });
  for (const Entry& e : sorted) s.count += e.n;
  // The smallest value with at least q of the observations at or below it.
  auto at = [&](double q) {
    const double want = q * static_cast<double>(s.count);
    uint64_t seen = 0;
    for (const Entry& e : sorted) {
      seen += e.n;
      if (static_cast<double>(seen) >= want) return e.value;
    }
    return sorted.back().value;
  };
  s.p50 = at(0.5);
  s.p90 = at(0.9);
  s.p99 = at(0.99);
  s.max = sorted.back().value;
  return s;
}

}  // namespace cai::server
