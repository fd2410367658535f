// CPU package sensor discovery on hwmon fixture trees: AMD (k10temp), Intel (coretemp, two sockets), none, and
// thermal zones / other hwmon chips that must not be taken for the CPU.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "hal/cpu/hwmon.h"
#include "test_paths.h"

namespace cai::hal::cpu {
namespace {

namespace fs = std::filesystem;

// A sysfs tree under a fresh temporary directory.
class SysfsFixture {
 public:
  explicit SysfsFixture(const std::string& tag) : root_(test::make_temp_dir("hwmon-" + tag)) {}
  const std::string& root() const { return root_; }
  void write(const std::string& rel, const std::string& text) const {
    const fs::path p = fs::path(root_) / rel;
    fs::create_directories(p.parent_path());
    std::ofstream(p) << text << "\n";
  }
  // hwmon<n> named `chip` with temp<k>_input = millidegrees and, when given, temp<k>_label.
  void hwmon(int n, const std::string& chip) const { write(dir(n) + "/name", chip); }
  void temp(int n, int k, long milli, const std::string& label = "") const {
    write(fmt(n, k, "input"), std::to_string(milli));
    if (!label.empty()) write(fmt(n, k, "label"), label);
  }

 private:
  static std::string dir(int n) { return "class/hwmon/hwmon" + std::to_string(n); }
  static std::string fmt(int n, int k, const char* what) { return dir(n) + "/temp" + std::to_string(k) + "_" + what; }
  std::string root_;
};

TEST(Hwmon, AmdK10tempReadsTctlNotTheCcdsOrTheNvme) {
  SysfsFixture f("k10temp");
  f.hwmon(0, "nvme");
  f.temp(0, 1, 91000, "Composite");
  f.hwmon(1, "k10temp");
  f.temp(1, 1, 63500, "Tctl");
  f.temp(1, 3, 70125, "Tccd1");
  f.write("class/thermal/thermal_zone0/temp", "99000");
  const CpuPackageSensor s = find_cpu_package_sensor(f.root());
  ASSERT_EQ(s.inputs.size(), 1u);
  EXPECT_EQ(s.inputs[0].chip, "k10temp");
  EXPECT_EQ(s.inputs[0].label, "Tctl");
  EXPECT_EQ(s.read_celsius().value_or(-1), 63.5f);
  EXPECT_NE(s.describe().find("hwmon k10temp Tctl"), std::string::npos) << s.describe();
}

TEST(Hwmon, ZenWithOnlyTdieFallsBackToIt) {
  SysfsFixture f("tdie");
  f.hwmon(3, "k10temp");
  f.temp(3, 2, 55000, "Tdie");
  const CpuPackageSensor s = find_cpu_package_sensor(f.root());
  ASSERT_TRUE(s.found());
  EXPECT_EQ(s.inputs[0].label, "Tdie");
  EXPECT_EQ(s.read_celsius().value_or(-1), 55.0f);
}

TEST(Hwmon, IntelCoretempTwoSocketsReportsTheHotterPackage) {
  SysfsFixture f("coretemp");
  f.hwmon(1, "coretemp");
  f.temp(1, 1, 48000, "Package id 0");
  f.temp(1, 2, 95000, "Core 0");  // a core is hotter, but the package is what is asked for
  f.hwmon(2, "coretemp");
  f.temp(2, 1, 52000, "Package id 1");
  f.temp(2, 2, 51000, "Core 0");
  const CpuPackageSensor s = find_cpu_package_sensor(f.root());
  ASSERT_EQ(s.inputs.size(), 2u);
  EXPECT_EQ(s.inputs[0].label, "Package id 0");
  EXPECT_EQ(s.inputs[1].label, "Package id 1");
  EXPECT_EQ(s.read_celsius().value_or(-1), 52.0f);
}

TEST(Hwmon, ThermalZonesAndOtherChipsAreNotTheCpu) {
  SysfsFixture f("zones");
  f.write("class/thermal/thermal_zone0/type", "acpitz");
  f.write("class/thermal/thermal_zone0/temp", "27800");
  f.hwmon(0, "acpitz");  // a thermal zone's own hwmon face
  f.temp(0, 1, 27800);
  f.hwmon(1, "nvme");
  f.temp(1, 1, 40000, "Composite");
  const CpuPackageSensor s = find_cpu_package_sensor(f.root());
  EXPECT_FALSE(s.found()) << s.describe();
  EXPECT_FALSE(s.read_celsius().has_value());
  EXPECT_EQ(s.describe(), "");
}

TEST(Hwmon, NoHwmonDirectoryAtAll) {
  SysfsFixture f("empty");
  f.write("class/thermal/thermal_zone0/temp", "45000");
  EXPECT_FALSE(find_cpu_package_sensor(f.root()).found());
  EXPECT_FALSE(find_cpu_package_sensor(f.root() + "/missing").found());
}

TEST(Hwmon, UnreadableInputGivesNoReading) {
  SysfsFixture f("garbage");
  f.hwmon(0, "coretemp");
  f.temp(0, 1, 0, "Package id 0");
  f.write("class/hwmon/hwmon0/temp1_input", "not a number");
  const CpuPackageSensor s = find_cpu_package_sensor(f.root());
  ASSERT_TRUE(s.found());
  EXPECT_FALSE(s.read_celsius().has_value());
}

}  // namespace
}  // namespace cai::hal::cpu
