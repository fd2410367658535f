// /metrics for the serving device: its sensor (or "none"), each reading it reports in base units, nothing for the
// readings it does not, and the step token budget the engine has in force.
#include <gtest/gtest.h>

#include "server/metrics.h"

namespace cai::server {
namespace {

bool has(const std::string& text, const std::string& line) { return text.find(line + "\n") != std::string::npos; }

TEST(DeviceMetrics, ReadingsInBaseUnitsAndTheSensorAsALabel) {
  ServerMetrics m;
  ConnectionCounters c;
  EngineStats stats;
  stats.token_budget = 128;
  DeviceReadings d{"cuda:0", "NVML \"GPU\" \\ 0", {}};
  d.telemetry.temperature_c = 71.5f;
  d.telemetry.clock_mhz = 1980;
  d.telemetry.power_w = 512.25f;
  d.telemetry.utilization = 0.5f;
  const std::string out = m.render(stats, c, 8, d);
  EXPECT_TRUE(has(out, R"(cai_device_info{device="cuda:0",sensor="NVML \"GPU\" \\ 0"} 1)")) << out;
  EXPECT_TRUE(has(out, R"(cai_device_temperature_celsius{device="cuda:0"} 71.5)")) << out;
  EXPECT_TRUE(has(out, R"(cai_device_clock_hertz{device="cuda:0"} 1980000000)")) << out;
  EXPECT_TRUE(has(out, R"(cai_device_power_watts{device="cuda:0"} 512.25)")) << out;
  EXPECT_TRUE(has(out, R"(cai_device_utilization_ratio{device="cuda:0"} 0.5)")) << out;
  EXPECT_TRUE(has(out, "# TYPE cai_device_temperature_celsius gauge")) << out;
  EXPECT_TRUE(has(out, "cai_engine_step_token_budget 128")) << out;
}

TEST(DeviceMetrics, NoSensorAndNoReadings) {
  ServerMetrics m;
  ConnectionCounters c;
  const std::string out = m.render(EngineStats{}, c, 8, DeviceReadings{"cpu:0", "", {}});
  EXPECT_TRUE(has(out, R"(cai_device_info{device="cpu:0",sensor="none"} 1)")) << out;
  for (const char* absent : {"cai_device_temperature_celsius", "cai_device_clock_hertz", "cai_device_power_watts",
                             "cai_device_utilization_ratio"})
    EXPECT_EQ(out.find(absent), std::string::npos) << absent;
  // Before the model is loaded there is no device section at all.
  EXPECT_EQ(m.render(std::nullopt, c, 8).find("cai_device_info"), std::string::npos);
}

}  // namespace
}  // namespace cai::server
