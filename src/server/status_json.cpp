// The dashboard's status: sampling the engine and its devices, and the /v1/status document.
#include "server/status_json.h"

#include <chrono>

namespace cai::server {

using nlohmann::json;

namespace {

double epoch_seconds() {
  return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
}

json optional_value(const std::optional<float>& v) { return v ? json(*v) : json(nullptr); }

json latency_json(const LatencySummary& s) {
  return {{"count", s.count}, {"p50", s.p50}, {"p90", s.p90}, {"p99", s.p99}, {"max", s.max}};
}

// Generated and prompt tokens per second between two samples (0 for none or the same time).
std::pair<double, double> rates(const StatusSample& a, const StatusSample& b) {
  const double dt = b.t - a.t;
  if (dt <= 0) return {0, 0};
  return {static_cast<double>(b.generated_tokens - a.generated_tokens) / dt,
          static_cast<double>(b.prompt_tokens - a.prompt_tokens) / dt};
}

}  // namespace

StatusSample sample_status(const Engine& engine) {
  StatusSample s;
  s.t = epoch_seconds();
  const EngineStats st = engine.stats();
  s.generated_tokens = st.generated_tokens;
  s.prompt_tokens = st.prompt_tokens;
  s.running = st.n_running;
  s.waiting = st.n_waiting;
  s.kv_blocks_used = st.kv_blocks_used;
  s.kv_blocks_total = st.kv_blocks_total;
  if (const Model* m = engine.model().model.get())
    for (hal::Device* d : m->devices()) {
      const hal::MemoryInfo mem = d->memory_info();
      const hal::Telemetry t = d->telemetry();
      s.devices.push_back({d->name(), mem.total_bytes - std::min(mem.total_bytes, mem.free_bytes), mem.total_bytes,
                           t.utilization, t.temperature_c, t.power_w, t.clock_mhz});
    }
  return s;
}

json status_json(const StatusView& v, const Engine& engine) {
  const EngineStats& s = v.stats;
  json out = {{"object", "status"}, {"model", v.model}, {"uptime_seconds", v.uptime_s}, {"window_seconds", v.window_s}};
  out["engine"] = {{"running", s.n_running},
                   {"waiting", s.n_waiting},
                   {"kv_blocks_used", s.kv_blocks_used},
                   {"kv_blocks_total", s.kv_blocks_total},
                   {"kv_dtype", s.kv_dtype},
                   {"context", v.context},
                   {"token_budget", s.token_budget},
                   {"token_budget_max", s.token_budget_max},
                   {"throttled", s.token_budget < s.token_budget_max},
                   {"prompt_tokens_total", s.prompt_tokens},
                   {"generated_tokens_total", s.generated_tokens},
                   {"prefix_hit_tokens_total", s.prefix_hit_tokens},
                   {"preemptions_total", s.preemptions},
                   {"spec_method", s.spec_method},
                   {"spec_acceptance",
                    s.spec_draft_tokens ? json(double(s.spec_accepted_tokens) / double(s.spec_draft_tokens)) : json()}};
  // Throughput over the last ten seconds of samples (the whole history when it is shorter).
  constexpr double kRateSpan = 10;
  json throughput = {{"generated_tokens_per_second", 0.0}, {"prompt_tokens_per_second", 0.0}, {"over_seconds", 0.0}};
  if (v.history.size() >= 2) {
    const StatusSample& last = v.history.back();
    size_t first = v.history.size() - 1;
    while (first > 0 && last.t - v.history[first].t < kRateSpan) --first;
    const auto [gen, prompt] = rates(v.history[first], last);
    throughput = {{"generated_tokens_per_second", gen},
                  {"prompt_tokens_per_second", prompt},
                  {"over_seconds", last.t - v.history[first].t}};
  }
  out["throughput"] = throughput;
  out["latency"] = {{"ttft_seconds", latency_json(v.ttft)}, {"tpot_seconds", latency_json(v.tpot)}};

  json devices = json::array();
  const Model* model = engine.model().model.get();
  if (model && !v.history.empty())
    for (const DeviceSample& d : v.history.back().devices) {
      json j = {{"name", d.name},
                {"memory_used_bytes", d.memory_used},
                {"memory_total_bytes", d.memory_total},
                {"utilization", optional_value(d.utilization)},
                {"temperature_celsius", optional_value(d.temperature_c)},
                {"power_watts", optional_value(d.power_w)},
                {"clock_mhz", optional_value(d.clock_mhz)}};
      for (hal::Device* dev : model->devices())
        if (dev->name() == d.name) {
          j["description"] = dev->description();
          j["sensor"] = dev->telemetry_sensor();
          j["weight_bytes"] = model->weight_bytes_on(*dev);
        }
      devices.push_back(std::move(j));
    }
  out["devices"] = devices;

  // Per sample: its time, the generation rate since the sample before, the queue, KV use, and each device's readings.
  json history = {{"t", json::array()},
                  {"generated_tokens_per_second", json::array()},
                  {"running", json::array()},
                  {"waiting", json::array()},
                  {"kv_blocks_used", json::array()},
                  {"devices", json::object()}};
  for (size_t i = 0; i < v.history.size(); ++i) {
    const StatusSample& h = v.history[i];
    history["t"].push_back(h.t);
    history["generated_tokens_per_second"].push_back(i == 0 ? 0.0 : rates(v.history[i - 1], h).first);
    history["running"].push_back(h.running);
    history["waiting"].push_back(h.waiting);
    history["kv_blocks_used"].push_back(h.kv_blocks_used);
    for (const DeviceSample& d : h.devices) {
      json& dj = history["devices"][d.name];
      dj["memory_used_bytes"].push_back(d.memory_used);
      dj["utilization"].push_back(optional_value(d.utilization));
      dj["temperature_celsius"].push_back(optional_value(d.temperature_c));
      dj["power_watts"].push_back(optional_value(d.power_w));
    }
  }
  out["history"] = std::move(history);
  return out;
}

}  // namespace cai::server
