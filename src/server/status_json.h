// The server's status for the dashboard: one sample of the engine and its devices (StatusHistory's sampler), and the
// body of GET /v1/status built from the latest sample, the history and the recent latencies.
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "cai/engine.h"
#include "server/recent_latencies.h"
#include "server/status_history.h"

namespace cai::server {

// The engine's counters and every device of its model, read now.
StatusSample sample_status(const Engine& engine);

struct StatusView {
  std::string model;
  double uptime_s = 0;
  EngineStats stats;
  int context = 0;
  std::vector<StatusSample> history;  // oldest first; the last one is the current reading
  LatencySummary ttft, tpot;
  double window_s = 0;
};

// {"object": "status", "model", "uptime_seconds", "window_seconds", "engine": {...}, "throughput": {...},
//  "latency": {"ttft_seconds", "tpot_seconds"}, "devices": [...], "history": {...}}: docs/serving.md#the-dashboard.
nlohmann::json status_json(const StatusView& v, const Engine& engine);

}  // namespace cai::server
