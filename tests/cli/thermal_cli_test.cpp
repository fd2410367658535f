// Device profiles and thermal-aware serving through the `cai` verbs: the detected (or --profile) profile's policies
// fill the options the user left unset, and say which have no effect yet; `cai serve --thermal-limit` names the CPU
// package sensor it reads (hwmon fixture trees via CAI_SYSFS_ROOT, and this machine as it is) in the log and /metrics.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <string>

#include "test_paths.h"

namespace cai {
namespace {

namespace fs = std::filesystem;

using test::cai_bin;
std::string model() { return test::data_path("models/TinyStories-656K-Q8_0.gguf"); }

struct ServeRun {
  std::string log;      // serve's stderr
  std::string metrics;  // GET /metrics once the engine was ready
};

// Starts `env cai serve -m MODEL --port 0 ARGS`, reads /metrics once the engine is ready, then stops it.
ServeRun serve_metrics(const std::string& env, const std::string& args) {
  const std::string log = test::make_temp_dir("serve-thermal") + "/log";
  test::CommandResult r =
      test::run_command("bash -c '" + env + " " + cai_bin() + " serve -m " + model() + " --port 0 -t 1 " + args +
                        " 2>" + log + " & pid=$!; for i in $(seq 300); do grep -q \"engine ready\" " + log +
                        " && break; kill -0 $pid 2>/dev/null || break; sleep 0.1; done; "
                        "port=$(sed -n \"s|.*chat page: http://[^:]*:\\([0-9]*\\)/.*|\\1|p\" " +
                        log +
                        "); "
                        "curl -s http://127.0.0.1:$port/metrics; kill $pid 2>/dev/null; wait $pid || true'");
  return {test::read_file(log), r.out};
}

// A sysfs tree with one AMD package sensor (k10temp Tctl at 63.5 °C) and a hotter thermal zone that must be ignored.
std::string k10temp_tree() {
  const std::string root = test::make_temp_dir("sysfs-k10temp");
  fs::create_directories(root + "/class/hwmon/hwmon2");
  fs::create_directories(root + "/class/thermal/thermal_zone0");
  std::ofstream(root + "/class/hwmon/hwmon2/name") << "k10temp\n";
  std::ofstream(root + "/class/hwmon/hwmon2/temp1_label") << "Tctl\n";
  std::ofstream(root + "/class/hwmon/hwmon2/temp1_input") << "63500\n";
  std::ofstream(root + "/class/thermal/thermal_zone0/temp") << "99000\n";
  return root;
}

TEST(ThermalCli, ServeReadsTheHwmonPackageSensorAndExportsIt) {
  const std::string root = k10temp_tree();
  const ServeRun s = serve_metrics("CAI_SYSFS_ROOT=" + root, "--thermal-limit 80");
  EXPECT_NE(s.log.find("cpu:0: temperature sensor hwmon k10temp Tctl (" + root +
                       "/class/hwmon/hwmon2/temp1_input): "
                       "63.5 °C"),
            std::string::npos)
      << s.log;
  EXPECT_NE(s.log.find("thermal limit 80 °C: the step token budget halves"), std::string::npos) << s.log;
  EXPECT_NE(s.metrics.find("cai_device_info{device=\"cpu:0\",sensor=\"hwmon k10temp Tctl (" + root +
                           "/class/hwmon/hwmon2/temp1_input)\"} 1"),
            std::string::npos)
      << s.metrics;
  EXPECT_NE(s.metrics.find("cai_device_temperature_celsius{device=\"cpu:0\"} 63.5\n"), std::string::npos) << s.metrics;
  EXPECT_NE(s.metrics.find("cai_engine_step_token_budget 512\n"), std::string::npos) << s.metrics;  // the default
}

TEST(ThermalCli, ServeWithoutASensorSaysSoAndTheLimitHasNoEffect) {
  const std::string root = test::make_temp_dir("sysfs-none");
  fs::create_directories(root + "/class/thermal/thermal_zone0");
  std::ofstream(root + "/class/thermal/thermal_zone0/temp") << "99000\n";  // not a CPU package sensor
  const ServeRun s = serve_metrics("CAI_SYSFS_ROOT=" + root, "--thermal-limit 80");
  EXPECT_NE(s.log.find("cpu:0: no temperature sensor"), std::string::npos) << s.log;
  EXPECT_NE(s.log.find("[warning] thermal limit 80 °C has no effect: cpu:0 reports no temperature"), std::string::npos)
      << s.log;
  EXPECT_NE(s.metrics.find("cai_device_info{device=\"cpu:0\",sensor=\"none\"} 1"), std::string::npos) << s.metrics;
  EXPECT_EQ(s.metrics.find("cai_device_temperature_celsius"), std::string::npos) << s.metrics;
}

// This machine as it is: serve starts and names its sensor, or says there is none, in the log and in /metrics.
TEST(ThermalCli, ServeOnThisMachineReportsItsSensorOrNone) {
  const ServeRun s = serve_metrics("", "--thermal-limit 80");
  ASSERT_NE(s.log.find("engine ready"), std::string::npos) << s.log;
  const bool sensor = s.log.find("cpu:0: temperature sensor hwmon ") != std::string::npos;
  EXPECT_TRUE(sensor || s.log.find("cpu:0: no temperature sensor") != std::string::npos) << s.log;
  EXPECT_NE(s.metrics.find(sensor ? "cai_device_info{device=\"cpu:0\",sensor=\"hwmon "
                                  : "cai_device_info{device=\"cpu:0\",sensor=\"none\"} 1"),
            std::string::npos)
      << s.metrics;
  EXPECT_EQ(s.metrics.find("cai_device_temperature_celsius{device=\"cpu:0\"}") != std::string::npos, sensor)
      << s.metrics;
}

// The H100 profile carries a thermal limit (82 °C): applied when --thermal-limit is not given, the user's value wins
// when it is (0 = off), and host_offload_below says it changes nothing on the CPU, whose KV is in host memory.
TEST(ThermalCli, ProfileThermalLimitIsTheDefaultAndTheFlagWins) {
  ServeRun s = serve_metrics("", "--profile nvidia-h100-sxm5");
  EXPECT_NE(s.log.find("cpu:0: device profile nvidia-h100-sxm5"), std::string::npos) << s.log;
  EXPECT_NE(s.log.find("policy thermal_limit_c 82: applied"), std::string::npos) << s.log;
  EXPECT_NE(s.log.find("policy host_offload_below 1: applied"), std::string::npos) << s.log;
  EXPECT_NE(s.log.find("KV offload: none on cpu:0: its KV cache is in host memory already"), std::string::npos)
      << s.log;
  EXPECT_NE(s.log.find("thermal limit 82 °C"), std::string::npos) << s.log;
  s = serve_metrics("", "--profile nvidia-h100-sxm5 --thermal-limit 0");
  EXPECT_NE(s.log.find("policy thermal_limit_c 82: not applied, --thermal-limit 0 given"), std::string::npos) << s.log;
  EXPECT_EQ(s.log.find("thermal limit 82 °C"), std::string::npos) << s.log;
}

// A profile's KV dtype becomes the cache's unless --kv-dtype is given; an unknown profile is an error naming the ids.
TEST(ThermalCli, ProfileKvDtypeAppliesUnlessTheUserSetsOne) {
  const std::string run = cai_bin() + " run -m " + model() + " -p Once -n 2 -t 1 ";
  test::CommandResult r = test::run_command(run + "--profile nvidia-h200-sxm");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.err.find("policy kv_dtype bf16: applied"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("bf16 KV cache"), std::string::npos) << r.err;
  EXPECT_EQ(r.err.find("policy thermal_limit_c"), std::string::npos) << r.err;  // the H200's is null: no line
  r = test::run_command(run + "--profile nvidia-h200-sxm --kv-dtype f32");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.err.find("policy kv_dtype bf16: not applied, --kv-dtype f32 given"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("f32 KV cache"), std::string::npos) << r.err;
  r = test::run_command(run + "--profile no-such-chip");
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.err.find("--profile no-such-chip: no such device profile (known: "), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("nvidia-h200-sxm"), std::string::npos) << r.err;
}

}  // namespace
}  // namespace cai
