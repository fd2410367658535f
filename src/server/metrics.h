// Server metrics: request counters and latency histograms, rendered with Engine::stats() as Prometheus text.
#pragma once

#include <cstdint>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "cai/engine.h"
#include "hal/hal.h"
#include "server/http/connection.h"
#include "server/recent_latencies.h"

namespace cai::server {

// A cumulative Prometheus histogram with fixed upper bounds (seconds); not thread-safe on its own.
class Histogram {
 public:
  explicit Histogram(std::vector<double> bounds);
  void observe(double value, uint64_t n = 1);
  // "# HELP", "# TYPE", the _bucket lines (le="…" and "+Inf"), _sum and _count.
  void render(std::string& out, const std::string& name, const std::string& help) const;
  uint64_t count() const { return count_; }

 private:
  std::vector<double> bounds_;
  std::vector<uint64_t> counts_;  // per bound, non-cumulative; the last entry is +Inf
  double sum_ = 0;
  uint64_t count_ = 0;
};

// The serving device as /metrics shows it: its name, the sensor its temperature comes from, its readings.
struct DeviceReadings {
  std::string device;  // "cpu:0"
  std::string sensor;  // hal::Device::telemetry_sensor(); "" = none
  hal::Telemetry telemetry;
};

class ServerMetrics {
 public:
  ServerMetrics();
  void count_request(const std::string& endpoint, int status);
  void observe_ttft(double seconds);
  // `n` output tokens that took `seconds_each` each.
  void observe_tpot(double seconds_each, uint64_t n);
  void observe_e2e(double seconds);
  // All metrics as Prometheus text exposition: the front door's connections (open, the cap, refusals), engine
  // gauges/counters when `stats` is given (model loaded), and the device's sensor and readings when `device` is.
  std::string render(const std::optional<EngineStats>& stats, const ConnectionCounters& connections,
                     int max_connections, const std::optional<DeviceReadings>& device = std::nullopt) const;
  // Percentiles of the time to first token and time per output token over the last minutes (RecentLatencies).
  LatencySummary recent_ttft();
  LatencySummary recent_tpot();
  double recent_window_seconds() const { return recent_ttft_.window_seconds(); }

 private:
  mutable std::mutex mu_;
  std::map<std::pair<std::string, int>, uint64_t> requests_;  // (endpoint, status) → count
  Histogram ttft_, tpot_, e2e_;
  RecentLatencies recent_ttft_, recent_tpot_;
};

}  // namespace cai::server
