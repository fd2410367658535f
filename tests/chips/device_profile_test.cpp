// Device profiles: every shipped data/chips/*.json loads and keeps the gathered facts; malformed profiles are errors
// naming the file and the field.
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <set>
#include <string>

#include "chips/device_profile.h"
#include "test_paths.h"

namespace cai::chips {
namespace {

const std::string kChipsDir = std::string(CAI_SOURCE_DIR) + "/data/chips";

std::vector<DeviceProfile> shipped() {
  auto r = load_profiles(kChipsDir);
  EXPECT_TRUE(r.ok()) << r.status().to_string();
  return r.ok() ? r.value() : std::vector<DeviceProfile>{};
}

TEST(DeviceProfiles, EveryShippedProfileLoadsWithItsFileNameAsId) {
  const auto profiles = shipped();
  ASSERT_EQ(profiles.size(), 24u);  // the 21 gathered chips + cpu-x86-64 + cpu-arm64 + cpu-kunpeng-920
  std::set<std::string> ids;
  for (const DeviceProfile& p : profiles) {
    EXPECT_TRUE(ids.insert(p.id).second) << "duplicate id " << p.id;
    EXPECT_EQ(std::filesystem::path(p.file).stem().string(), p.id);
    EXPECT_FALSE(p.vendor.empty()) << p.id;
    EXPECT_FALSE(p.name.empty()) << p.id;
  }
  EXPECT_NE(find_profile(profiles, "cpu-x86-64"), nullptr);
  EXPECT_NE(find_profile(profiles, "cpu-arm64"), nullptr);
  EXPECT_EQ(find_profile(profiles, "no-such-chip"), nullptr);
}

// The 21 entries of tests/data/chips/device-profiles.json (id, memory GiB, bandwidth GB/s; 0 = null there).
TEST(DeviceProfiles, GatheredFactsAreKept) {
  struct Fact {
    const char* id;
    double memory_gib, bandwidth_gbs;
  };
  const Fact facts[] = {
      {"ascend-910b2", 64, 0},        {"ascend-910b3", 64, 0},        {"ascend-910b4", 32, 0},
      {"ascend-910-93", 64, 0},       {"ascend-310p3", 48, 0},        {"cambricon-mlu370-x8", 48, 614.4},
      {"cambricon-mlu590", 0, 0},     {"biren-br100", 64, 1640},      {"biren-br104", 32, 819},
      {"iluvatar-bi-v150", 64, 0},    {"iluvatar-bi-v100", 32, 1200}, {"enflame-i20", 0, 0},
      {"mthreads-s4000", 48, 768},    {"hygon-z100", 32, 1000},       {"hygon-k100-ai", 64, 0},
      {"kunlunxin-r200", 32, 512},    {"kunlunxin-p800", 0, 0},       {"metax-c500", 64, 0},
      {"nvidia-h100-sxm5", 80, 3350}, {"nvidia-h200-sxm", 141, 4800}, {"amd-mi300x", 192, 5300},
  };
  const auto profiles = shipped();
  for (const Fact& f : facts) {
    const DeviceProfile* p = find_profile(profiles, f.id);
    ASSERT_NE(p, nullptr) << f.id;
    // 0 in the table = null: the profile must keep it unknown.
    EXPECT_EQ(p->memory_gib, f.memory_gib > 0 ? std::optional<double>(f.memory_gib) : std::nullopt) << f.id;
    EXPECT_EQ(p->bandwidth_gbs, f.bandwidth_gbs > 0 ? std::optional<double>(f.bandwidth_gbs) : std::nullopt) << f.id;
  }
}

// Every fact and source of the gathered chip facts (tests/data/chips/device-profiles.json) is in the shipped profile.
TEST(DeviceProfiles, AgreeWithTheDesignFileWherePresent) {
  const std::string design = test::data_path("chips/device-profiles.json");
  if (!std::filesystem::exists(design)) GTEST_SKIP() << design << " is not beside this checkout";
  const auto profiles = shipped();
  const nlohmann::json entries = nlohmann::json::parse(test::read_file(design));
  ASSERT_EQ(entries.size(), 21u);
  auto opt = [](const nlohmann::json& v) { return v.is_null() ? std::optional<double>() : v.get<double>(); };
  for (const auto& e : entries) {
    const std::string id = e["id"];
    const DeviceProfile* p = find_profile(profiles, id);
    ASSERT_NE(p, nullptr) << id;
    EXPECT_EQ(p->vendor, e["vendor"].get<std::string>()) << id;
    EXPECT_EQ(p->name, e["name"].get<std::string>()) << id;
    for (const char* k : {"memory_gib", "bandwidth_gbs", "sram_mib", "bf16_tflops", "int8_tops"}) {
      const std::optional<double> got = k == std::string("memory_gib")      ? p->memory_gib
                                        : k == std::string("bandwidth_gbs") ? p->bandwidth_gbs
                                        : k == std::string("sram_mib")      ? p->sram_mib
                                        : k == std::string("bf16_tflops")   ? p->bf16_tflops
                                                                            : p->int8_tops;
      EXPECT_EQ(got, opt(e[k])) << id << " " << k;
    }
    EXPECT_EQ(p->fp8, e["fp8"].is_null() ? std::optional<bool>() : e["fp8"].get<bool>()) << id;
    if (!e["pci_vendor_id"].is_null()) {
      EXPECT_EQ(p->pci_vendor_id, std::stoul(e["pci_vendor_id"].get<std::string>(), nullptr, 16)) << id;
    }
    for (const auto& d : e["pci_device_ids"]) {
      const auto want = static_cast<uint16_t>(std::stoul(d.get<std::string>(), nullptr, 16));
      EXPECT_NE(std::find(p->pci_device_ids.begin(), p->pci_device_ids.end(), want), p->pci_device_ids.end()) << id;
    }
    for (const auto& s : e["sources"])
      EXPECT_NE(std::find(p->sources.begin(), p->sources.end(), s.get<std::string>()), p->sources.end())
          << id << ": " << s;
  }
}

TEST(DeviceProfiles, PoliciesNameTheBackendAndEveryPciChipItsRuntime) {
  for (const DeviceProfile& p : shipped()) {
    const bool cpu = p.id.rfind("cpu-", 0) == 0;
    const std::string want = p.vendor == "NVIDIA"                       ? "cuda"
                             : p.vendor == "AMD" || p.vendor == "Hygon" ? "hip"
                             : cpu                                      ? "cpu"
                                                                        : "";
    EXPECT_EQ(p.policies.backend, want) << p.id;
    EXPECT_EQ(p.runtime_libraries.empty(), cpu) << p.id;
    EXPECT_LE(p.policies.host_offload_below.value_or(0), 1.0) << p.id;
  }
  const auto profiles = shipped();
  // Huawei also makes NICs and ZIP engines: Ascend profiles must name device ids and the accelerator class.
  for (const char* id : {"ascend-910b2", "ascend-910-93", "ascend-310p3"}) {
    const DeviceProfile* p = find_profile(profiles, id);
    ASSERT_NE(p, nullptr);
    EXPECT_FALSE(p->pci_device_ids.empty()) << id;
    EXPECT_EQ(p->pci_class, 0x120000u) << id;
  }
  EXPECT_EQ(find_profile(profiles, "ascend-310p3")->policies.kv_dtype, "f16");  // no usable BF16 there
}

// A minimal valid profile with `key` (a top-level field, or "policies.<field>") set to `value`.
std::string profile_with(const std::string& key, const nlohmann::json& value) {
  nlohmann::json j = {{"id", "x"},        {"vendor", "V"},
                      {"name", "X"},      {"pci_vendor_id", "0x1234"},
                      {"memory_gib", 16}, {"policies", {{"backend", "cuda"}}}};
  if (key.rfind("policies.", 0) == 0)
    j["policies"][key.substr(9)] = value;
  else
    j[key] = value;
  return j.dump();
}

TEST(DeviceProfiles, MalformedFieldsNameTheFileAndTheField) {
  const std::string file = "data/chips/x.json";
  ASSERT_TRUE(parse_profile(profile_with("notes", "fine"), file).ok());
  auto r = parse_profile(profile_with("memory_gib", "64"), file);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().message(), "data/chips/x.json: memory_gib: expected a number, got \"64\"");

  const std::pair<std::string, nlohmann::json> cases[] = {
      {"memory_gib", -64},
      {"bandwidth_gbs", 0},
      {"colour", "red"},
      {"pci_vendor_id", "0x10g0"},
      {"pci_vendor_id", "0x10de0"},
      {"pci_vendor_id", 4318},
      {"pci_device_ids", nlohmann::json::array({"0x2335", "2335"})},
      {"pci_class", "0x1200"},
      {"fp8", "yes"},
      {"sources", nlohmann::json::array({"a", 1})},
      {"runtime_libraries", nlohmann::json::array({"/usr/lib/libcuda.so"})},
      {"policies.kv_dtype", "fp4"},
      {"policies.host_offload_below", 1.5},
      {"policies.pool_length_buckets", nlohmann::json::array({2048, 512})},
      {"policies.thermal_limit_c", -5},
      {"policies.sync_launch", 1},
      {"policies.backend", "Cu da"},
      {"policies.speed", "max"},
      {"measured_efficiency", "fast"},
      {"measured_efficiency", nlohmann::json::array({{{"backend", "cpu"}}})},
      {"measured_efficiency",
       nlohmann::json::array({{{"backend", "cpu"}, {"weights", "q4_0"}, {"decode", 3}, {"source", "s"}}})},
      {"measured_efficiency", nlohmann::json::array({{{"backend", "cpu"}, {"weights", "q4_0"}, {"source", "s"}}})},
      {"measured_efficiency", nlohmann::json::array({{{"backend", "cpu"}, {"weights", "q4_0"}, {"decode", 0.5}}})},
      {"measured_efficiency",
       nlohmann::json::array(
           {{{"backend", "cpu"}, {"weights", "q4_0"}, {"threads", -1}, {"decode", 0.5}, {"source", "s"}}})},
      {"measured_efficiency",
       nlohmann::json::array(
           {{{"backend", "cpu"}, {"weights", "q4_0"}, {"decode", 0.5}, {"source", "s"}, {"speed", 1}}})},
  };
  for (const auto& [key, value] : cases) {
    auto bad = parse_profile(profile_with(key, value), file);
    ASSERT_FALSE(bad.ok()) << key << " = " << value.dump();
    EXPECT_EQ(bad.status().message().rfind(file + ": " + key, 0), 0u) << bad.status().message();
  }
  for (const std::string& text :
       {std::string("{"), std::string("[1]"), std::string(R"({"vendor": "V", "name": "X"})")}) {
    auto bad = parse_profile(text, file);
    ASSERT_FALSE(bad.ok()) << text;
    EXPECT_EQ(bad.status().message().rfind(file + ":", 0), 0u) << bad.status().message();
  }
}

// What `cai bench --save-profile` writes: the backend, the weight type, the threads (CPU), the two factors and their
// source.
TEST(DeviceProfiles, MeasuredEfficiencyEntries) {
  const nlohmann::json entries = nlohmann::json::array(
      {{{"backend", "cpu"}, {"weights", "q4_0"}, {"threads", 2}, {"decode", 0.9}, {"prefill", 0.8}, {"source", "s"}},
       {{"backend", "cuda"}, {"weights", "q8_0"}, {"decode", 0.08}, {"source", "t"}}});
  auto p = parse_profile(profile_with("measured_efficiency", entries), "x.json");
  ASSERT_TRUE(p.ok()) << p.status().to_string();
  ASSERT_EQ(p->measured_efficiency.size(), 2u);
  const MeasuredEfficiency& cpu = p->measured_efficiency[0];
  EXPECT_EQ(cpu.backend, "cpu");
  EXPECT_EQ(cpu.weights, "q4_0");
  EXPECT_EQ(cpu.threads, 2);
  EXPECT_DOUBLE_EQ(*cpu.decode, 0.9);
  EXPECT_DOUBLE_EQ(*cpu.prefill, 0.8);
  EXPECT_EQ(p->measured_efficiency[1].threads, 0);
  EXPECT_FALSE(p->measured_efficiency[1].prefill);
}

TEST(DeviceProfiles, LoadRequiresIdToEqualTheFileName) {
  const std::string dir = test::make_temp_dir("chips-id");
  std::ofstream(dir + "/a.json") << profile_with("id", "b");
  auto r = load_profiles(dir);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find(dir + "/a.json: id: \"b\" must equal the file name \"a\""), std::string::npos)
      << r.status().message();
  EXPECT_FALSE(load_profiles(dir + "/missing").ok());
}

TEST(DeviceProfiles, DefaultDirHonoursCaiChipsDir) {
  ::setenv("CAI_CHIPS_DIR", "/some/where", 1);
  EXPECT_EQ(default_profile_dir(), "/some/where");
  ::unsetenv("CAI_CHIPS_DIR");
  auto r = load_profiles(default_profile_dir());  // the build tree finds the source tree's data/chips
  ASSERT_TRUE(r.ok()) << r.status().to_string();
  EXPECT_EQ(r.value().size(), 24u);
}

}  // namespace
}  // namespace cai::chips
