// The CPU package temperature from Linux hwmon: the sensor is chosen by its driver's name (k10temp, zenpower,
// coretemp, ...) and label, never an arbitrary thermal zone. The sysfs root is movable so tests use fixture trees.
#pragma once

#include <optional>
#include <string>
#include <vector>

namespace cai::hal::cpu {

// One temperature input of one hwmon device.
struct HwmonInput {
  std::string chip;   // the driver's name (hwmonN/name): "k10temp", "coretemp"
  std::string label;  // tempK_label, or "temp1" for drivers without labels
  std::string path;   // .../hwmonN/tempK_input (millidegrees Celsius)
};

// The CPU package sensors: every hwmon device of the first driver in the preference list that is present (one per
// socket on multi-socket hosts), each with its package input. Empty when the host has none (a VM, a container without
// /sys/class/hwmon, an unknown CPU driver).
struct CpuPackageSensor {
  std::vector<HwmonInput> inputs;
  bool found() const { return !inputs.empty(); }
  // "hwmon k10temp Tctl (/sys/class/hwmon/hwmon2/temp1_input)"; "" when none.
  std::string describe() const;
  // The hottest package in °C; empty when none was readable.
  std::optional<float> read_celsius() const;
};

CpuPackageSensor find_cpu_package_sensor(const std::string& sysfs_root);
// $CAI_SYSFS_ROOT where set, else "/sys".
std::string sysfs_root_from_env();

}  // namespace cai::hal::cpu
