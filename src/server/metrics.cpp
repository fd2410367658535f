// Server metrics: Prometheus text exposition of request counters, latency histograms, engine stats and device readings.
#include "server/metrics.h"

#include <fmt/format.h>

#include <chrono>

namespace cai::server {

Histogram::Histogram(std::vector<double> bounds) : bounds_(std::move(bounds)), counts_(bounds_.size() + 1, 0) {}

void Histogram::observe(double value, uint64_t n) {
  size_t i = 0;
  while (i < bounds_.size() && value > bounds_[i]) ++i;
  counts_[i] += n;
  sum_ += value * double(n);
  count_ += n;
}

void Histogram::render(std::string& out, const std::string& name, const std::string& help) const {
  out += fmt::format("# HELP {} {}\n# TYPE {} histogram\n", name, help, name);
  uint64_t cumulative = 0;
  for (size_t i = 0; i < bounds_.size(); ++i) {
    cumulative += counts_[i];
    out += fmt::format("{}_bucket{{le=\"{}\"}} {}\n", name, bounds_[i], cumulative);
  }
  out += fmt::format("{}_bucket{{le=\"+Inf\"}} {}\n{}_sum {}\n{}_count {}\n", name, count_, name, sum_, name, count_);
}

ServerMetrics::ServerMetrics()
    : ttft_({0.001, 0.005, 0.01, 0.02, 0.04, 0.06, 0.08, 0.1, 0.25, 0.5, 0.75, 1, 2.5, 5, 7.5, 10, 20, 40, 80}),
      tpot_({0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.075, 0.1, 0.15, 0.2, 0.3, 0.4, 0.5, 0.75, 1, 2.5}),
      e2e_({0.1, 0.3, 0.5, 0.8, 1, 1.5, 2, 2.5, 5, 10, 15, 20, 30, 40, 50, 60, 120, 240, 480}) {}

void ServerMetrics::count_request(const std::string& endpoint, int status) {
  std::lock_guard lock(mu_);
  ++requests_[{endpoint, status}];
}

namespace {

double steady_seconds() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

}  // namespace

void ServerMetrics::observe_ttft(double seconds) {
  std::lock_guard lock(mu_);
  ttft_.observe(seconds);
  recent_ttft_.observe(steady_seconds(), seconds);
}

void ServerMetrics::observe_tpot(double seconds_each, uint64_t n) {
  std::lock_guard lock(mu_);
  tpot_.observe(seconds_each, n);
  recent_tpot_.observe(steady_seconds(), seconds_each, n);
}

LatencySummary ServerMetrics::recent_ttft() {
  std::lock_guard lock(mu_);
  return recent_ttft_.summary(steady_seconds());
}

LatencySummary ServerMetrics::recent_tpot() {
  std::lock_guard lock(mu_);
  return recent_tpot_.summary(steady_seconds());
}

void ServerMetrics::observe_e2e(double seconds) {
  std::lock_guard lock(mu_);
  e2e_.observe(seconds);
}

namespace {

void scalar(std::string& out, const char* name, const char* type, const char* help, double value) {
  out += fmt::format("# HELP {} {}\n# TYPE {} {}\n{} {}\n", name, help, name, type, name, value);
}

void engine_metrics(std::string& out, const EngineStats& s) {
  scalar(out, "cai_num_requests_running", "gauge", "Requests in the running batch.", s.n_running);
  scalar(out, "cai_num_requests_waiting", "gauge", "Requests waiting to be scheduled.", s.n_waiting);
  scalar(out, "cai_kv_blocks_total", "gauge", "KV cache blocks in the pool.", s.kv_blocks_total);
  scalar(out, "cai_kv_blocks_used", "gauge", "KV cache blocks in use.", s.kv_blocks_used);
  scalar(out, "cai_kv_blocks_free", "gauge", "KV cache blocks free.", s.kv_blocks_total - s.kv_blocks_used);
  out += fmt::format(
      "# HELP cai_kv_cache_info KV cache element type (label dtype).\n# TYPE cai_kv_cache_info gauge\n"
      "cai_kv_cache_info{{dtype=\"{}\"}} 1\n",
      s.kv_dtype);
  scalar(out, "cai_kv_cache_bytes_per_token", "gauge", "KV cache bytes per token, all layers.",
         double(s.kv_bytes_per_token));
  scalar(out, "cai_kv_offload_layers", "gauge", "Layers whose KV cache lives in host memory (host KV tier).",
         s.kv_offload_layers);
  scalar(out, "cai_kv_offload_host_bytes", "gauge", "Host memory the offloaded KV layers take.",
         double(s.kv_host_bytes));
  out += fmt::format(
      "# HELP cai_kv_offload_bytes_total KV bytes the host tier moved, by direction.\n"
      "# TYPE cai_kv_offload_bytes_total counter\n"
      "cai_kv_offload_bytes_total{{direction=\"to_device\"}} {}\n"
      "cai_kv_offload_bytes_total{{direction=\"to_host\"}} {}\n",
      s.kv_offload_uploaded_bytes, s.kv_offload_downloaded_bytes);
  scalar(out, "cai_device_transfer_bytes_total", "counter",
         "Activation bytes moved between the model's devices (pipeline stage boundaries, experts on another device).",
         double(s.device_transfer_bytes));
  scalar(out, "cai_prompt_tokens_total", "counter", "Prompt tokens received.", double(s.prompt_tokens));
  scalar(out, "cai_generation_tokens_total", "counter", "Tokens generated.", double(s.generated_tokens));
  scalar(out, "cai_prefix_cache_hit_tokens_total", "counter", "Prompt tokens served from the prefix cache.",
         double(s.prefix_hit_tokens));
  scalar(out, "cai_computed_prompt_tokens_total", "counter", "Prompt tokens computed.",
         double(s.computed_prompt_tokens));
  scalar(out, "cai_preemptions_total", "counter", "Requests preempted for lack of KV blocks.", double(s.preemptions));
  scalar(out, "cai_engine_steps_total", "counter", "Engine steps run.", double(s.steps));
  out += fmt::format(
      "# HELP cai_spec_info Speculative decoding: the server's method (label method); the value is "
      "its draft tokens per step.\n# TYPE cai_spec_info gauge\ncai_spec_info{{method=\"{}\"}} {}\n",
      s.spec_method, s.spec_tokens);
  scalar(out, "cai_spec_draft_tokens_total", "counter", "Draft tokens verified.", double(s.spec_draft_tokens));
  scalar(out, "cai_spec_accepted_tokens_total", "counter", "Draft tokens accepted.", double(s.spec_accepted_tokens));
  scalar(out, "cai_spec_verify_steps_total", "counter", "Sequence steps that verified a draft.",
         double(s.spec_verify_steps));
  scalar(out, "cai_spec_acceptance_ratio", "gauge", "Accepted over verified draft tokens so far (0 before any).",
         s.spec_draft_tokens ? double(s.spec_accepted_tokens) / double(s.spec_draft_tokens) : 0.0);
  scalar(
      out, "cai_spec_tokens_per_verify_step", "gauge",
      "Tokens a verifying sequence step produced on average: accepted drafts plus its own (0 before any).",
      s.spec_verify_steps ? double(s.spec_accepted_tokens + s.spec_verify_steps) / double(s.spec_verify_steps) : 0.0);
  scalar(out, "cai_engine_step_token_budget", "gauge",
         "Tokens one engine step may take now (lowered while the device is at its thermal limit).", s.token_budget);
}

// A Prometheus label value: backslash, double quote and newline escaped.
std::string label_value(const std::string& s) {
  std::string out;
  for (char c : s) {
    if (c == '\\' || c == '"') out += '\\';
    out += c == '\n' ? std::string("\\n") : std::string(1, c);
  }
  return out;
}

void device_metrics(std::string& out, const DeviceReadings& d) {
  const std::string device = label_value(d.device);
  out += fmt::format(
      "# HELP cai_device_info The serving device and the sensor its temperature is read from "
      "(sensor=\"none\": no temperature).\n# TYPE cai_device_info gauge\n"
      "cai_device_info{{device=\"{}\",sensor=\"{}\"}} 1\n",
      device, d.sensor.empty() ? "none" : label_value(d.sensor));
  auto reading = [&](const char* name, const char* help, const std::optional<float>& v, double scale) {
    if (!v) return;
    out += fmt::format("# HELP {} {}\n# TYPE {} gauge\n{}{{device=\"{}\"}} {}\n", name, help, name, name, device,
                       double(*v) * scale);
  };
  reading("cai_device_temperature_celsius", "Device temperature.", d.telemetry.temperature_c, 1);
  reading("cai_device_clock_hertz", "Device compute (SM) clock.", d.telemetry.clock_mhz, 1e6);
  reading("cai_device_power_watts", "Device power draw.", d.telemetry.power_w, 1);
  reading("cai_device_utilization_ratio", "Fraction of time the device was busy (0..1).", d.telemetry.utilization, 1);
}

}  // namespace

std::string ServerMetrics::render(const std::optional<EngineStats>& stats, const ConnectionCounters& connections,
                                  int max_connections, const std::optional<DeviceReadings>& device) const {
  std::string out;
  scalar(out, "cai_model_loaded", "gauge", "1 once the model is loaded and the engine is serving.", stats ? 1 : 0);
  scalar(out, "cai_http_connections_open", "gauge", "Client connections open.", connections.open.load());
  scalar(out, "cai_http_connections_max", "gauge", "Client connections allowed at once (more are answered 503).",
         max_connections);
  scalar(out, "cai_http_connections_refused_total", "counter", "Connections answered 503: too many open.",
         double(connections.refused_full.load()));
  scalar(out, "cai_http_request_head_timeouts_total", "counter", "Requests answered 408: head not sent in time.",
         double(connections.head_timeouts.load()));
  scalar(out, "cai_http_request_head_too_large_total", "counter", "Requests answered 431: head over its limits.",
         double(connections.head_too_large.load()));
  {
    std::lock_guard lock(mu_);
    out +=
        "# HELP cai_http_requests_total HTTP requests by endpoint and status code.\n"
        "# TYPE cai_http_requests_total counter\n";
    for (const auto& [key, n] : requests_)
      out += fmt::format("cai_http_requests_total{{endpoint=\"{}\",status=\"{}\"}} {}\n", key.first, key.second, n);
    ttft_.render(out, "cai_time_to_first_token_seconds", "Time from request arrival to the first generated token.");
    tpot_.render(out, "cai_time_per_output_token_seconds", "Time between generated tokens.");
    e2e_.render(out, "cai_e2e_request_latency_seconds", "Time from request arrival to its last token.");
  }
  if (stats) engine_metrics(out, *stats);
  if (device) device_metrics(out, *device);
  return out;
}

}  // namespace cai::server
