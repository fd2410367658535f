// CPU package temperature from Linux hwmon: drivers in order of preference, each with the label of its package input.
#include "hal/cpu/hwmon.h"

#include <fmt/format.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>

namespace cai::hal::cpu {

namespace {

namespace fs = std::filesystem;

// A driver that reports the CPU package, and how its package input is labelled.
struct PackageDriver {
  const char* chip;
  std::vector<const char*> labels;  // preferred first; a label ending in a space matches as a prefix; empty = temp1
};

// AMD Zen (k10temp: Tctl is what the firmware throttles on; Tdie where an offset is applied), the out-of-tree
// zenpower, Intel (coretemp: one "Package id N" per socket), then SoCs whose thermal driver registers the CPU itself.
const std::vector<PackageDriver>& package_drivers() {
  static const std::vector<PackageDriver> drivers = {
      {"k10temp", {"Tctl", "Tdie"}},
      {"zenpower", {"Tctl", "Tdie"}},
      {"coretemp", {"Package id "}},
      {"cpu_thermal", {}},
  };
  return drivers;
}

std::string first_line(const fs::path& p) {
  std::ifstream in(p);
  std::string s;
  std::getline(in, s);
  while (!s.empty() && (s.back() == '\n' || s.back() == '\r' || s.back() == ' ')) s.pop_back();
  return s;
}

bool label_matches(const std::string& label, const std::string& want) {
  return want.ends_with(' ') ? label.starts_with(want) : label == want;
}

// The package input of one hwmon device of `driver`, if it has one.
std::optional<HwmonInput> package_input(const fs::path& dir, const PackageDriver& driver) {
  if (driver.labels.empty()) {
    if (!fs::exists(dir / "temp1_input")) return std::nullopt;
    return HwmonInput{driver.chip, "temp1", (dir / "temp1_input").string()};
  }
  std::vector<std::pair<std::string, fs::path>> labelled;  // (label, input)
  std::error_code ec;
  for (const fs::directory_entry& e : fs::directory_iterator(dir, ec)) {
    const std::string file = e.path().filename().string();
    if (!file.starts_with("temp") || !file.ends_with("_label")) continue;
    const fs::path input = dir / (file.substr(0, file.size() - 6) + "_input");
    if (fs::exists(input)) labelled.emplace_back(first_line(e.path()), input);
  }
  std::sort(labelled.begin(), labelled.end());
  for (const char* want : driver.labels)
    for (const auto& [label, input] : labelled)
      if (label_matches(label, want)) return HwmonInput{driver.chip, label, input.string()};
  return std::nullopt;
}

}  // namespace

std::string CpuPackageSensor::describe() const {
  std::string s;
  for (const HwmonInput& in : inputs)
    s += fmt::format("{}hwmon {} {} ({})", s.empty() ? "" : ", ", in.chip, in.label, in.path);
  return s;
}

std::optional<float> CpuPackageSensor::read_celsius() const {
  std::optional<float> hottest;
  for (const HwmonInput& in : inputs) {
    std::ifstream f(in.path);
    long milli = 0;
    if (!(f >> milli)) continue;
    const float c = static_cast<float>(milli) / 1000.0f;
    if (!hottest || c > *hottest) hottest = c;
  }
  return hottest;
}

CpuPackageSensor find_cpu_package_sensor(const std::string& sysfs_root) {
  std::vector<fs::path> dirs;
  std::error_code ec;
  for (const fs::directory_entry& e : fs::directory_iterator(fs::path(sysfs_root) / "class" / "hwmon", ec))
    dirs.push_back(e.path());
  std::sort(dirs.begin(), dirs.end());
  for (const PackageDriver& driver : package_drivers()) {
    CpuPackageSensor sensor;
    for (const fs::path& dir : dirs) {
      if (first_line(dir / "name") != driver.chip) continue;
      if (std::optional<HwmonInput> in = package_input(dir, driver)) sensor.inputs.push_back(std::move(*in));
    }
    if (sensor.found()) return sensor;
  }
  return {};
}

std::string sysfs_root_from_env() {
  const char* s = std::getenv("CAI_SYSFS_ROOT");
  return s && *s ? s : "/sys";
}

}  // namespace cai::hal::cpu
