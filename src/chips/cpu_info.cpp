// The host CPU as `cai detect` describes it, from /proc/cpuinfo, /proc/meminfo and the sysfs NUMA node list.
#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <sstream>

#include <fmt/format.h>

#include "chips/detect.h"

namespace cai::chips {

namespace {

namespace fs = std::filesystem;

std::string trim(const std::string& s) {
  const size_t b = s.find_first_not_of(" \t");
  const size_t e = s.find_last_not_of(" \t\r");
  return b == std::string::npos ? "" : s.substr(b, e - b + 1);
}

// "key : value" lines; the first value of each key (the first processor's), plus how often "processor" occurs.
struct KeyValues {
  std::map<std::string, std::string> first;
  int n_processor = 0;
  std::string get(const std::string& key) const {
    auto it = first.find(key);
    return it == first.end() ? "" : it->second;
  }
};

KeyValues read_key_values(const fs::path& path) {
  KeyValues kv;
  std::ifstream in(path);
  std::string line;
  while (std::getline(in, line)) {
    const size_t colon = line.find(':');
    if (colon == std::string::npos) continue;
    const std::string key = trim(line.substr(0, colon));
    if (key == "processor") ++kv.n_processor;
    kv.first.emplace(key, trim(line.substr(colon + 1)));  // keeps the first
  }
  return kv;
}

std::set<std::string> words(const std::string& s) {
  std::istringstream in(s);
  std::set<std::string> out;
  for (std::string w; in >> w;) out.insert(w);
  return out;
}

bool has_all(const std::set<std::string>& flags, std::initializer_list<const char*> need) {
  return std::all_of(need.begin(), need.end(), [&](const char* f) { return flags.count(f) > 0; });
}

// x86-64 micro-architecture levels (psABI), from the kernel's flag names (pni = SSE3). LZCNT ("abm") is not required
// for v3: some hypervisors hide that flag on CPUs that have AVX-512.
std::string x86_level(const std::set<std::string>& f) {
  if (!has_all(f, {"cx16", "lahf_lm", "popcnt", "pni", "sse4_1", "sse4_2", "ssse3"})) return "x86-64";
  if (!has_all(f, {"avx", "avx2", "bmi1", "bmi2", "f16c", "fma", "movbe", "xsave"})) return "x86-64-v2";
  if (!has_all(f, {"avx512f", "avx512bw", "avx512cd", "avx512dq", "avx512vl"})) return "x86-64-v3";
  return "x86-64-v4";
}

std::vector<std::string> present(const std::set<std::string>& f, std::initializer_list<const char*> wanted) {
  std::vector<std::string> out;
  for (const char* w : wanted)
    if (f.count(w)) out.emplace_back(w);
  return out;
}

// AArch64 cores by MIDR implementer and part number (cpuinfo's "CPU implementer" and "CPU part"), with the products
// built on them, as the Linux kernel's asm/cputype.h and LLVM's host CPU table name them; and the CAI profile of a
// core that has one of its own (else cpu-arm64).
struct ArmCore {
  unsigned long implementer, part;
  const char* name;
  const char* profile;
};
constexpr ArmCore kArmCores[] = {
    {0x41, 0xd08, "Arm Cortex-A72", "cpu-arm64"},
    {0x41, 0xd0b, "Arm Cortex-A76", "cpu-arm64"},
    {0x41, 0xd0c, "Arm Neoverse N1 (Ampere Altra, AWS Graviton2)", "cpu-arm64"},
    {0x41, 0xd40, "Arm Neoverse V1 (AWS Graviton3)", "cpu-arm64"},
    {0x41, 0xd49, "Arm Neoverse N2", "cpu-arm64"},
    {0x41, 0xd4f, "Arm Neoverse V2 (AWS Graviton4, NVIDIA Grace)", "cpu-arm64"},
    {0x48, 0xd01, "HiSilicon Kunpeng 920 (TaiShan v110 cores)", "cpu-kunpeng-920"},
    {0x70, 0x662, "Phytium FTC662 (FT-2000+/64)", "cpu-arm64"},
    {0x70, 0x663, "Phytium FTC663 (FT-2500, S2500)", "cpu-arm64"},
    {0xc0, 0xac3, "Ampere AmpereOne", "cpu-arm64"},
};

const ArmCore* arm_core(const std::string& implementer, const std::string& part) {
  if (implementer.empty() || part.empty()) return nullptr;
  const unsigned long impl = std::strtoul(implementer.c_str(), nullptr, 0);
  const unsigned long p = std::strtoul(part.c_str(), nullptr, 0);
  for (const ArmCore& c : kArmCores)
    if (c.implementer == impl && c.part == p) return &c;
  return nullptr;
}

int count_numa_nodes(const std::string& sysfs_root) {
  int n = 0;
  std::error_code ec;
  for (const auto& ent : fs::directory_iterator(fs::path(sysfs_root) / "devices" / "system" / "node", ec)) {
    const std::string name = ent.path().filename().string();
    if (name.size() > 4 && name.rfind("node", 0) == 0 &&
        std::all_of(name.begin() + 4, name.end(), [](char c) { return std::isdigit(static_cast<unsigned char>(c)); }))
      ++n;
  }
  return std::max(n, 1);
}

}  // namespace

CpuInfo describe_cpu(const std::string& proc_root, const std::string& sysfs_root) {
  CpuInfo cpu;
  const KeyValues info = read_key_values(fs::path(proc_root) / "cpuinfo");
  cpu.logical_cores = info.n_processor;
  cpu.model = info.get("model name");
  cpu.mhz = std::strtod(info.get("cpu MHz").c_str(), nullptr);
  if (const std::string flags = info.get("flags"); !flags.empty()) {
    const auto f = words(flags);
    cpu.arch = "x86_64";
    cpu.isa_level = x86_level(f);
    cpu.features =
        present(f, {"avx512_vnni", "avx_vnni", "avx512_bf16", "avx512_fp16", "amx_tile", "amx_int8", "amx_bf16"});
    cpu.profile = "cpu-x86-64";
  } else if (const std::string feats = info.get("Features"); !feats.empty()) {
    const auto f = words(feats);
    cpu.arch = "aarch64";
    cpu.isa_level = "aarch64";
    cpu.features = present(f, {"asimd", "asimdhp", "asimddp", "i8mm", "bf16", "sve", "sve2"});
    const ArmCore* core = arm_core(info.get("CPU implementer"), info.get("CPU part"));
    cpu.profile = core ? core->profile : "cpu-arm64";
    if (cpu.model.empty())
      cpu.model =
          core ? core->name
               : fmt::format("aarch64 implementer {} part {}", info.get("CPU implementer"), info.get("CPU part"));
  }
  const std::string mem = read_key_values(fs::path(proc_root) / "meminfo").get("MemTotal");  // "131072 kB"
  cpu.memory_bytes = std::strtoull(mem.c_str(), nullptr, 10) * 1024;
  cpu.numa_nodes = count_numa_nodes(sysfs_root);
  return cpu;
}

}  // namespace cai::chips
