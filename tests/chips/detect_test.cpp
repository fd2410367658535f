// Detection on fixture trees (tests/data/chips): PCI matching per vendor (Huawei NICs and ZIP engines never count),
// runtime probes, backend availability, the CPU description, the JSON shape and the `--device auto` choice.
#include <gtest/gtest.h>

#include <fstream>
#include <memory>
#include <set>

#include "chips/detect_report.h"
#include "shipped_profiles.h"
#include "test_paths.h"

namespace cai::chips {
namespace {

using test_support::shipped_profiles;

DetectOptions fixture(const std::string& sysfs, const std::string& proc, std::set<std::string> present = {}) {
  DetectOptions o;
  o.sysfs_root = test::data_path("chips/" + sysfs);
  o.proc_root = test::data_path("chips/" + proc);
  o.probe = [present](const std::string& lib) { return LibraryProbe{lib, present.count(lib) > 0, ""}; };
  return o;
}

// A backend with one device of a given memory size, standing in for a loaded plugin.
class FakeDevice : public hal::Device {
 public:
  FakeDevice(std::string name, size_t bytes) : name_(std::move(name)), bytes_(bytes) {}
  std::string name() const override { return name_; }
  std::string description() const override { return "fake " + name_; }
  hal::MemoryInfo memory_info() const override { return {bytes_, bytes_}; }
  hal::Telemetry telemetry() const override { return {}; }
  const hal::OpTable& ops() const override { return ops_; }
  hal::Stream& default_stream() override { std::abort(); }
  hal::OpContext op_context() override { return {}; }
  bool host_visible() const override { return false; }
  Result<hal::Buffer> allocate(size_t, hal::MemoryKind) override { return unsupported("fake"); }
  void free(void*, hal::MemoryKind) override {}
  void set_batch_invariant(bool) override {}

 private:
  std::string name_;
  size_t bytes_;
  hal::OpTable ops_{};
};
class FakeBackend : public hal::Backend {
 public:
  FakeBackend(std::string name, std::vector<size_t> sizes) : name_(std::move(name)) {
    for (size_t i = 0; i < sizes.size(); ++i)
      devs_.push_back(std::make_unique<FakeDevice>(name_ + ":" + std::to_string(i), sizes[i]));
  }
  std::string name() const override { return name_; }
  std::vector<hal::Device*> devices() override {
    std::vector<hal::Device*> out;
    for (auto& d : devs_) out.push_back(d.get());
    return out;
  }

 private:
  std::string name_;
  std::vector<std::unique_ptr<FakeDevice>> devs_;
};

const Accelerator* at(const DetectReport& r, const std::string& address) {
  for (const Accelerator& a : r.accelerators)
    if (a.pci.address == address) return &a;
  return nullptr;
}

TEST(Detect, ScanReadsVendorDeviceAndClassSortedByAddress) {
  const auto devs = scan_pci(test::data_path("chips/sysfs-mixed"));
  ASSERT_EQ(devs.size(), 9u);
  EXPECT_EQ(devs[0].address, "0000:00:00.0");
  EXPECT_EQ(devs[2].address, "0000:17:00.0");
  EXPECT_EQ(devs[2].vendor_id, 0x10de);
  EXPECT_EQ(devs[2].device_id, 0x2335);
  EXPECT_EQ(devs[2].class_code, 0x030200u);
  EXPECT_TRUE(scan_pci("/nonexistent").empty());
}

// The mixed host: H200 (by device id), Ascend 910B (three profiles share 0xd802), an A100 (NVIDIA, no profile: the
// vendor's backend), and four devices that must not count: Huawei NIC, HiSilicon ZIP engine, Huawei BMC VGA, audio.
TEST(Detect, MixedHostMatchesAcceleratorsOnly) {
  hal::Registry reg;
  const auto ps = shipped_profiles();
  const DetectReport r = detect(ps, reg, fixture("sysfs-mixed", "proc-x86"));
  ASSERT_EQ(r.accelerators.size(), 3u);
  const Accelerator* h200 = at(r, "0000:17:00.0");
  ASSERT_NE(h200, nullptr);
  ASSERT_NE(h200->match.profile, nullptr);
  EXPECT_EQ(h200->match.profile->id, "nvidia-h200-sxm");
  EXPECT_EQ(h200->match.kind, MatchKind::kDeviceId);
  EXPECT_EQ(h200->match.backend, "cuda");
  EXPECT_TRUE(h200->match.alternatives.empty());

  const Accelerator* npu = at(r, "0000:81:00.0");
  ASSERT_NE(npu, nullptr);
  EXPECT_EQ(npu->match.profile->id, "ascend-910b2");
  EXPECT_EQ(npu->match.alternatives, (std::vector<std::string>{"ascend-910b3", "ascend-910b4"}));
  EXPECT_NE(npu->match.reason.find("sysfs does not tell them apart"), std::string::npos) << npu->match.reason;
  EXPECT_EQ(npu->match.backend, "");
  EXPECT_FALSE(npu->backend_available);

  const Accelerator* a100 = at(r, "0000:ca:00.0");
  ASSERT_NE(a100, nullptr);
  EXPECT_EQ(a100->match.profile, nullptr);
  EXPECT_EQ(a100->match.kind, MatchKind::kVendor);
  EXPECT_EQ(a100->match.backend, "cuda");

  for (const char* not_counted : {"0000:02:00.0", "0000:3b:00.0", "0000:75:00.0", "0000:17:00.1", "0000:c1:00.0"})
    EXPECT_EQ(at(r, not_counted), nullptr) << not_counted;
  EXPECT_TRUE(r.backends.empty());  // an empty registry
}

TEST(Detect, HostWithOnlyOrdinaryDevicesHasNoAccelerators) {
  hal::Registry reg;
  EXPECT_TRUE(detect(shipped_profiles(), reg, fixture("sysfs-plain", "proc-x86")).accelerators.empty());
}

// backend_available needs the backend registered AND one of the profile's runtime libraries loading.
TEST(Detect, BackendAvailableNeedsLoadedBackendAndRuntime) {
  const auto ps = shipped_profiles();
  hal::Registry none;
  const DetectReport no_backend = detect(ps, none, fixture("sysfs-mixed", "proc-x86", {"libcuda.so.1"}));
  EXPECT_TRUE(at(no_backend, "0000:17:00.0")->runtime_available);
  EXPECT_FALSE(at(no_backend, "0000:17:00.0")->backend_available);

  hal::Registry reg;
  reg.add(std::make_unique<FakeBackend>("cuda", std::vector<size_t>{80ull << 30, 141ull << 30}));
  const DetectReport no_runtime = detect(ps, reg, fixture("sysfs-mixed", "proc-x86"));
  const Accelerator* h200 = at(no_runtime, "0000:17:00.0");
  EXPECT_TRUE(h200->backend_loaded);
  EXPECT_FALSE(h200->runtime_available);
  ASSERT_EQ(h200->runtime.size(), 1u);
  EXPECT_EQ(h200->runtime[0].name, "libcuda.so.1");
  EXPECT_FALSE(h200->backend_available);
  EXPECT_EQ(choose_auto_device(no_runtime).device, "cpu");
  EXPECT_NE(choose_auto_device(no_runtime).reason.find("vendor runtime missing (libcuda.so.1)"), std::string::npos);

  const DetectReport ready = detect(ps, reg, fixture("sysfs-mixed", "proc-x86", {"libcuda.so.1"}));
  EXPECT_TRUE(at(ready, "0000:17:00.0")->backend_available);
  EXPECT_TRUE(at(ready, "0000:ca:00.0")->backend_available);
  EXPECT_FALSE(at(ready, "0000:81:00.0")->backend_available);
  const AutoDevice choice = choose_auto_device(ready);
  EXPECT_EQ(choice.device, "cuda:1") << choice.reason;  // the larger of the two devices
  EXPECT_NE(choice.reason.find("most memory"), std::string::npos);
}

TEST(Detect, AutoDeviceIsCpuWithoutAccelerators) {
  hal::Registry reg;
  const AutoDevice c = choose_auto_device(detect(shipped_profiles(), reg, fixture("sysfs-plain", "proc-x86")));
  EXPECT_EQ(c.device, "cpu");
  EXPECT_EQ(c.reason, "no accelerator recognised on PCI");
  const AutoDevice m = choose_auto_device(detect(shipped_profiles(), reg, fixture("sysfs-mixed", "proc-x86")));
  EXPECT_EQ(m.device, "cpu");
  EXPECT_NE(m.reason.find("0000:81:00.0 (ascend-910b2): CAI has no backend for this chip yet"), std::string::npos)
      << m.reason;
  EXPECT_NE(m.reason.find("backend 'cuda' not loaded"), std::string::npos) << m.reason;
}

// One device per vendor in the profiles: the profile it gets (or none).
TEST(Detect, EveryProfiledVendorMatches) {
  const auto ps = shipped_profiles();
  struct Case {
    uint16_t vendor, device;
    uint32_t cls;
    const char* profile;  // nullptr: not an accelerator CAI counts
    std::vector<std::string> alternatives;
  };
  const Case cases[] = {
      {0x10de, 0x2330, 0x030200, "nvidia-h100-sxm5", {}},
      {0x1002, 0x74a1, 0x120000, "amd-mi300x", {}},
      {0x19e5, 0xd803, 0x120000, "ascend-910-93", {}},
      {0x19e5, 0xd500, 0x120000, "ascend-310p3", {}},
      // A listed id matches whatever class the function reports; the class only orders equal id matches.
      {0x19e5, 0xd802, 0x020000, "ascend-910b2", {"ascend-910b3", "ascend-910b4"}},
      {0x1d94, 0x6210, 0x038000, "hygon-k100-ai", {}},
      {0x19e5, 0x1822, 0x020000, nullptr, {}},  // Hi1822 NIC
      {0x19e5, 0xa250, 0x120000, nullptr, {}},  // ZIP engine: accelerator class, no Ascend id
      {0xcabc, 0x0370, 0x120000, "cambricon-mlu370-x8", {"cambricon-mlu590"}},
      {0xcabc, 0x0370, 0x020000, nullptr, {}},  // no ids in the profile: only an accelerator class counts
      {0x1e3e, 0x0001, 0x030200, "iluvatar-bi-v100", {"iluvatar-bi-v150"}},
      {0x1e36, 0x8001, 0x120000, "enflame-i20", {}},
      {0x1ed5, 0x0327, 0x030000, "mthreads-s4000", {}},
      {0x1d94, 0x6210, 0x0b4000, "hygon-k100-ai", {}},
      {0x1d94, 0x55b7, 0x0b4000, "hygon-z100", {}},  // by class: the Z100 profile lists no ids
      {0x1d22, 0x3684, 0x120000, "kunlunxin-r200", {}},
      {0x1d22, 0x3688, 0x120000, "kunlunxin-p800", {}},
      {0x9999, 0x0a01, 0x030200, "metax-c500", {}},
      // Biren publishes no device ids: any id of its vendor in a display or accelerator class, never another class.
      {0x1ee0, 0x0001, 0x120000, "biren-br100", {"biren-br104"}},
      {0x1ee0, 0x0001, 0x030200, "biren-br100", {"biren-br104"}},
      {0x1ee0, 0x0001, 0x0b4000, nullptr, {}},
      {0x8086, 0x0b5a, 0x120000, nullptr, {}},  // a vendor without profiles
  };
  for (const Case& c : cases) {
    const auto m = match_device({"0000:01:00.0", c.vendor, c.device, c.cls}, ps);
    const std::string what = hex_id(c.vendor, 4) + ":" + hex_id(c.device, 4);
    if (!c.profile) {
      EXPECT_FALSE(m) << what << " matched " << (m && m->profile ? m->profile->id : "(vendor)");
      continue;
    }
    ASSERT_TRUE(m) << what;
    ASSERT_NE(m->profile, nullptr) << what;
    EXPECT_EQ(m->profile->id, c.profile) << what;
    EXPECT_EQ(m->alternatives, c.alternatives) << what;
  }
}

TEST(Detect, DescribesAnX86Cpu) {
  const CpuInfo c = describe_cpu(test::data_path("chips/proc-x86"), test::data_path("chips/sysfs-mixed"));
  EXPECT_EQ(c.model, "Intel(R) Xeon(R) Platinum 8480+");
  EXPECT_EQ(c.arch, "x86_64");
  EXPECT_EQ(c.logical_cores, 4);
  EXPECT_EQ(c.isa_level, "x86-64-v4");
  EXPECT_EQ(c.features, (std::vector<std::string>{"avx512_vnni", "avx_vnni", "avx512_bf16", "avx512_fp16", "amx_tile",
                                                  "amx_int8", "amx_bf16"}));
  EXPECT_EQ(c.numa_nodes, 2);
  EXPECT_EQ(c.memory_bytes, 32768000ull * 1024);
  EXPECT_EQ(c.profile, "cpu-x86-64");
}

TEST(Detect, X86LevelFollowsTheFlags) {
  const std::string dir = test::make_temp_dir("cpuinfo");
  auto level = [&](const std::string& flags) {
    std::ofstream(dir + "/cpuinfo") << "processor\t: 0\nmodel name\t: test\nflags\t\t: " << flags << "\n";
    return describe_cpu(dir, dir).isa_level;
  };
  const std::string v2 = "fpu cx8 cmov sse sse2 cx16 lahf_lm popcnt pni sse4_1 sse4_2 ssse3";
  const std::string v3 = v2 + " avx avx2 bmi1 bmi2 f16c fma movbe xsave";
  EXPECT_EQ(level("fpu sse sse2"), "x86-64");
  EXPECT_EQ(level(v2), "x86-64-v2");
  EXPECT_EQ(level(v2 + " avx avx2"), "x86-64-v2");
  EXPECT_EQ(level(v3), "x86-64-v3");
  EXPECT_EQ(level(v3 + " avx512f avx512bw avx512cd avx512dq"), "x86-64-v3");
  EXPECT_EQ(level(v3 + " avx512f avx512bw avx512cd avx512dq avx512vl"), "x86-64-v4");
  EXPECT_EQ(describe_cpu(dir, dir).numa_nodes, 1);  // no node directories: one node
}

TEST(Detect, DescribesAnArmCpu) {
  const CpuInfo c = describe_cpu(test::data_path("chips/proc-arm64"), test::data_path("chips/sysfs-plain"));
  EXPECT_EQ(c.arch, "aarch64");
  EXPECT_EQ(c.model, "Arm Neoverse V2 (AWS Graviton4, NVIDIA Grace)");  // from implementer 0x41, part 0xd4f
  EXPECT_EQ(c.logical_cores, 2);
  EXPECT_EQ(c.features, (std::vector<std::string>{"asimd", "asimdhp", "asimddp", "i8mm", "bf16", "sve", "sve2"}));
  EXPECT_EQ(c.memory_bytes, 8000000ull * 1024);
  EXPECT_EQ(c.profile, "cpu-arm64");
}

// An Atlas 800-style host: a Kunpeng 920 (named from its MIDR, with its own profile), four NUMA nodes, two Ascend
// 910B NPUs; the HiSilicon ZIP engine (the NPUs' class) and the NIC do not count.
TEST(Detect, AscendHostWithAKunpengCpu) {
  hal::Registry reg;
  const auto ps = shipped_profiles();
  const DetectReport r = detect(ps, reg, fixture("sysfs-ascend-kunpeng", "proc-kunpeng"));
  EXPECT_EQ(r.cpu.arch, "aarch64");
  EXPECT_EQ(r.cpu.model, "HiSilicon Kunpeng 920 (TaiShan v110 cores)");
  EXPECT_EQ(r.cpu.profile, "cpu-kunpeng-920");
  EXPECT_EQ(r.cpu.logical_cores, 4);
  EXPECT_EQ(r.cpu.numa_nodes, 4);
  EXPECT_EQ(r.cpu.memory_bytes, 1056964608ull * 1024);
  EXPECT_EQ(r.cpu.features, (std::vector<std::string>{"asimd", "asimdhp", "asimddp"}));  // no SVE, I8MM or BF16
  ASSERT_EQ(r.accelerators.size(), 2u);
  for (const Accelerator& a : r.accelerators) {
    ASSERT_NE(a.match.profile, nullptr) << a.pci.address;
    EXPECT_EQ(a.match.profile->id, "ascend-910b2");
    EXPECT_EQ(a.match.kind, MatchKind::kDeviceId);
  }
  EXPECT_NE(find_profile(ps, "cpu-kunpeng-920"), nullptr);
}

// A DCU whose function reports a display controller (0x0380, as AMD-derived boards may) is matched by its listed
// device id like one reporting the profile's co-processor class; the reason says the class differs.
TEST(Detect, ADeviceIdMatchesWhateverTheClass) {
  hal::Registry reg;
  const auto ps = shipped_profiles();  // the report points into it
  const DetectReport r = detect(ps, reg, fixture("sysfs-dcu-display", "proc-x86"));
  ASSERT_EQ(r.accelerators.size(), 2u);
  for (const Accelerator& a : r.accelerators) {
    ASSERT_NE(a.match.profile, nullptr) << a.pci.address;
    EXPECT_EQ(a.match.profile->id, "hygon-k100-ai") << a.pci.address;
    EXPECT_EQ(a.match.kind, MatchKind::kDeviceId);
  }
  const Accelerator* display = at(r, "0000:23:00.0");
  ASSERT_NE(display, nullptr);
  EXPECT_NE(display->match.reason.find("PCI class 0x038000 is not the profile's 0x0b4000"), std::string::npos)
      << display->match.reason;
  EXPECT_EQ(at(r, "0000:43:00.0")->match.reason.find("PCI class"), std::string::npos);
}

TEST(Detect, ProbeLibraryDlopensAndReportsFailures) {
  EXPECT_TRUE(probe_library("libc.so.6").loaded);
  const LibraryProbe missing = probe_library("libcai-no-such-runtime.so");
  EXPECT_FALSE(missing.loaded);
  EXPECT_NE(missing.error.find("libcai-no-such-runtime.so"), std::string::npos) << missing.error;
}

TEST(Detect, JsonShape) {
  hal::Registry reg;
  reg.add(std::make_unique<FakeBackend>("cuda", std::vector<size_t>{1ull << 30}));
  const auto j = report_json(detect(shipped_profiles(), reg, fixture("sysfs-mixed", "proc-x86", {"libcuda.so.1"})));
  ASSERT_TRUE(j.contains("cpu") && j.contains("accelerators") && j.contains("backends")) << j.dump();
  EXPECT_EQ(j["cpu"]["isa_level"], "x86-64-v4");
  ASSERT_EQ(j["accelerators"].size(), 3u);
  const auto& h200 = j["accelerators"][0];
  EXPECT_EQ(h200["pci_address"], "0000:17:00.0");
  EXPECT_EQ(h200["vendor_id"], "0x10de");
  EXPECT_EQ(h200["device_id"], "0x2335");
  EXPECT_EQ(h200["profile"], "nvidia-h200-sxm");
  EXPECT_EQ(h200["backend"], "cuda");
  EXPECT_EQ(h200["backend_available"], true);
  const auto& npu = j["accelerators"][1];
  EXPECT_EQ(npu["device_id"], "0xd802");  // lowercase, four digits
  EXPECT_EQ(npu["backend_available"], false);
  EXPECT_EQ(npu["unavailable_reason"], "CAI has no backend for this chip yet");
  EXPECT_TRUE(j["accelerators"][2]["profile"].is_null());
  EXPECT_EQ(j["backends"][0]["name"], "cuda");
  EXPECT_EQ(j["backends"][0]["devices"][0]["name"], "cuda:0");
  EXPECT_EQ(hex_id(0x1d94, 4), "0x1d94");
  EXPECT_EQ(hex_id(0x0b4000, 6), "0x0b4000");
}

TEST(Detect, TableListsEveryAcceleratorAndWhy) {
  hal::Registry reg;
  const std::string t = report_table(detect(shipped_profiles(), reg, fixture("sysfs-mixed", "proc-x86")));
  EXPECT_NE(t.find("Intel(R) Xeon(R) Platinum 8480+ (x86_64, x86-64-v4"), std::string::npos) << t;
  EXPECT_NE(t.find("Accelerators (3):"), std::string::npos) << t;
  EXPECT_NE(t.find("nvidia-h200-sxm"), std::string::npos) << t;
  EXPECT_NE(t.find("no: backend 'cuda' not loaded"), std::string::npos) << t;
  EXPECT_NE(t.find("ascend-910b3, ascend-910b4"), std::string::npos) << t;
}

}  // namespace
}  // namespace cai::chips
