// `cai detect` on fixture sysfs trees (CAI_SYSFS_ROOT, CAI_PROC_ROOT): the JSON keys, the profiles and counts per
// host, a malformed profile named in the error, and `--device auto` running `cai run` on the CPU.
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <filesystem>
#include <fstream>
#include <string>

#include "test_paths.h"

namespace cai {
namespace {

using test::cai_bin;

test::CommandResult detect_on(const std::string& sysfs, const std::string& extra_env = "") {
  return test::run_command("CAI_SYSFS_ROOT=" + sysfs + " CAI_PROC_ROOT=" + test::data_path("chips/proc-x86") + " " +
                           extra_env + " " + cai_bin() + " detect --json");
}

nlohmann::json parse(const test::CommandResult& r) {
  EXPECT_EQ(r.exit_code, 0) << r.err;
  nlohmann::json j = nlohmann::json::parse(r.out, nullptr, false);
  EXPECT_FALSE(j.is_discarded()) << r.out;
  return j;
}

TEST(DetectCli, MixedHostJsonHasTheKeysAndTheRightProfiles) {
  const nlohmann::json j = parse(detect_on(test::data_path("chips/sysfs-mixed")));
  for (const char* k : {"model", "arch", "logical_cores", "isa_level", "features", "numa_nodes", "memory_bytes"})
    EXPECT_TRUE(j["cpu"].contains(k)) << k;
  EXPECT_EQ(j["cpu"]["numa_nodes"], 2);
  ASSERT_EQ(j["accelerators"].size(), 3u) << j.dump(2);  // H200, Ascend 910B, A100; no Huawei NIC/ZIP/BMC
  for (const auto& a : j["accelerators"])
    for (const char* k : {"pci_address", "vendor_id", "device_id", "profile", "backend", "backend_available"})
      EXPECT_TRUE(a.contains(k)) << k;
  EXPECT_EQ(j["accelerators"][0]["profile"], "nvidia-h200-sxm");
  EXPECT_EQ(j["accelerators"][0]["vendor_id"], "0x10de");
  EXPECT_EQ(j["accelerators"][1]["profile"], "ascend-910b2");
  EXPECT_EQ(j["accelerators"][1]["backend_available"], false);
  EXPECT_TRUE(j["accelerators"][2]["profile"].is_null());
  ASSERT_FALSE(j["backends"].empty());
  EXPECT_EQ(j["backends"][0]["name"], "cpu");
  EXPECT_EQ(j["backends"][0]["runtime"], "built into cai");  // a plugin's: its file and its runtime's versions
}

TEST(DetectCli, OrdinaryHostHasNoAcceleratorsAndSaysSo) {
  EXPECT_TRUE(parse(detect_on(test::data_path("chips/sysfs-plain")))["accelerators"].empty());
  test::CommandResult table =
      test::run_command("CAI_SYSFS_ROOT=" + test::data_path("chips/sysfs-plain") + " " + cai_bin() + " detect");
  EXPECT_EQ(table.exit_code, 0) << table.err;
  EXPECT_NE(table.out.find("Accelerators: none recognised on PCI"), std::string::npos) << table.out;
  EXPECT_NE(table.out.find("cpu:0"), std::string::npos) << table.out;
}

// One tree per vendor in the profiles, each with two cards of that vendor and a Huawei NIC.
TEST(DetectCli, OneTreePerVendor) {
  struct Host {
    const char* vendor;
    const char* device;
    const char* cls;
    const char* profile;
  };
  const Host hosts[] = {
      {"0x10de", "0x2335", "0x030200", "nvidia-h200-sxm"},
      {"0x1002", "0x74a1", "0x120000", "amd-mi300x"},
      {"0x19e5", "0xd803", "0x120000", "ascend-910-93"},
      {"0xcabc", "0x0370", "0x120000", "cambricon-mlu370-x8"},
      {"0x1e3e", "0x0001", "0x030200", "iluvatar-bi-v100"},
      {"0x1e36", "0x8001", "0x120000", "enflame-i20"},
      {"0x1ed5", "0x0323", "0x030000", "mthreads-s4000"},
      {"0x1d94", "0x6211", "0x0b4000", "hygon-k100-ai"},
      {"0x1d22", "0x3686", "0x120000", "kunlunxin-p800"},
      {"0x9999", "0x0a01", "0x030200", "metax-c500"},
      // Biren publishes no device ids (the id here is a stand-in): its two profiles match by vendor and class.
      {"0x1ee0", "0x0001", "0x120000", "biren-br100"},
  };
  for (const Host& h : hosts) {
    const std::string root = test::make_temp_dir("sysfs");
    auto add = [&](const std::string& addr, const char* v, const char* d, const char* c) {
      const std::string dir = root + "/bus/pci/devices/" + addr;
      std::filesystem::create_directories(dir);
      std::ofstream(dir + "/vendor") << v << "\n";
      std::ofstream(dir + "/device") << d << "\n";
      std::ofstream(dir + "/class") << c << "\n";
    };
    add("0000:01:00.0", h.vendor, h.device, h.cls);
    add("0000:02:00.0", h.vendor, h.device, h.cls);
    add("0000:03:00.0", "0x19e5", "0x1822", "0x020000");
    const nlohmann::json j = parse(detect_on(root));
    ASSERT_EQ(j["accelerators"].size(), 2u) << h.profile << "\n" << j.dump(2);
    for (const auto& a : j["accelerators"]) {
      EXPECT_EQ(a["profile"], h.profile);
      EXPECT_EQ(a["vendor_id"], h.vendor);
      EXPECT_EQ(a["device_id"], h.device);
    }
  }
}

TEST(DetectCli, MalformedProfileIsAnErrorNamingFileAndField) {
  const std::string dir = test::make_temp_dir("chips-bad");
  std::ofstream(dir + "/x.json") << R"({"id": "x", "vendor": "V", "name": "X", "memory_gib": "64"})";
  test::CommandResult r = detect_on(test::data_path("chips/sysfs-plain"), "CAI_CHIPS_DIR=" + dir);
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.err.find(dir + "/x.json: memory_gib: expected a number, got \"64\""), std::string::npos) << r.err;
}

// --device auto on a host with no accelerator picks the CPU, says why, and generates.
TEST(DetectCli, DeviceAutoPicksTheCpuAndRuns) {
  const std::string model = std::string(CAI_SOURCE_DIR) + "/data/models/TinyStories-656K-Q8_0.gguf";
  const std::string run = cai_bin() + " run -m " + model + " --device auto -t 1 -n 8 --temp 0 -p 'Once upon a time'";
  test::CommandResult r = test::run_command("CAI_SYSFS_ROOT=" + test::data_path("chips/sysfs-plain") + " " + run);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_FALSE(r.out.empty());
  EXPECT_NE(r.err.find("--device auto: chose cpu: no accelerator recognised on PCI"), std::string::npos) << r.err;
  // The same on this host's own /sys: whatever it has, the choice is logged and the run succeeds.
  test::CommandResult here = test::run_command(run);
  ASSERT_EQ(here.exit_code, 0) << here.err;
  EXPECT_NE(here.err.find("--device auto: chose "), std::string::npos) << here.err;
}

}  // namespace
}  // namespace cai
