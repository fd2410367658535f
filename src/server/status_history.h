// StatusHistory: what the dashboard charts over the last minutes. A thread of its own samples, once a second, the
// engine's counters and gauges and every device's readings (memory, utilisation, temperature, power), keeping the
// last window's samples.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

namespace cai::server {

struct DeviceSample {
  std::string name;
  uint64_t memory_used = 0, memory_total = 0;
  std::optional<float> utilization, temperature_c, power_w, clock_mhz;
};

struct StatusSample {
  double t = 0;  // seconds since the epoch
  uint64_t generated_tokens = 0, prompt_tokens = 0;
  int running = 0, waiting = 0, kv_blocks_used = 0, kv_blocks_total = 0;
  std::vector<DeviceSample> devices;
};

class StatusHistory {
 public:
  using Sampler = std::function<StatusSample()>;
  // Samples every period_s seconds on its own thread until destroyed, keeping window_s seconds of them.
  StatusHistory(Sampler sample, double period_s = 1.0, double window_s = 300);
  ~StatusHistory();
  StatusHistory(const StatusHistory&) = delete;
  StatusHistory& operator=(const StatusHistory&) = delete;

  // The samples kept, oldest first.
  std::vector<StatusSample> samples() const;

 private:
  void run();

  Sampler sample_;
  double period_s_, window_s_;
  mutable std::mutex mu_;
  std::condition_variable wake_;
  bool stopping_ = false;
  std::deque<StatusSample> samples_;
  std::thread thread_;
};

}  // namespace cai::server
