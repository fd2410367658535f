// Chip profiles for the verbs: resolving a name or file, and this host's CPU measured now.
#include "chip_profiles.h"

#include <fmt/format.h>

#include <algorithm>

#include "chips/detect.h"
#include "core/membw.h"
#include "core/thread_pool.h"

namespace cai::cli {

Result<chips::DeviceProfile> resolve_chip(const std::string& name) {
  if (name.size() > 5 && name.ends_with(".json")) return chips::load_profile(name);
  const std::string dir = chips::default_profile_dir();
  CAI_ASSIGN_OR_RETURN(std::vector<chips::DeviceProfile> profiles, chips::load_profiles(dir));
  if (const chips::DeviceProfile* p = chips::find_profile(profiles, name)) return *p;
  std::vector<const chips::DeviceProfile*> hits;
  for (const chips::DeviceProfile& p : profiles)
    if (!name.empty() && p.id.find(name) != std::string::npos) hits.push_back(&p);
  if (hits.size() == 1) return *hits[0];
  std::string ids;
  for (const chips::DeviceProfile& p : profiles) ids += (ids.empty() ? "" : ", ") + p.id;
  return not_found("{} chip profile '{}' (profiles in {}: {})", hits.empty() ? "no" : "ambiguous", name, dir, ids);
}

namespace {

// Integer multiply-adds ×2 one thread issues per cycle with two vector pipes of its widest int8 dot product: AVX-512
// VNNI (64 lanes of 4-byte groups → 256), AVX-VNNI or AVX2 (128), AArch64 SDOT (64), else plain 128-bit SIMD (32).
double int8_ops_per_cycle(const chips::CpuInfo& cpu) {
  auto has = [&](const char* f) {
    return std::find(cpu.features.begin(), cpu.features.end(), f) != cpu.features.end();
  };
  if (cpu.isa_level == "x86-64-v4" && has("avx512_vnni")) return 256;
  if (cpu.isa_level == "x86-64-v4" || cpu.isa_level == "x86-64-v3") return 128;
  if (has("asimddp")) return 64;
  return 32;
}

}  // namespace

Result<chips::DeviceProfile> host_chip(int threads, std::optional<chips::DeviceProfile> profile,
                                       std::optional<double> bandwidth_gbs) {
  const chips::DetectOptions where = chips::DetectOptions::from_env();
  const chips::CpuInfo cpu = chips::describe_cpu(where.proc_root, where.sysfs_root);
  if (cpu.profile.empty())
    return unsupported("--chip host: {}/cpuinfo shows neither an x86-64 nor an AArch64 CPU", where.proc_root);
  chips::DeviceProfile chip;
  if (profile) {
    chip = std::move(*profile);
  } else {
    CAI_ASSIGN_OR_RETURN(chip, resolve_chip(cpu.profile));
  }
  const int n = threads > 0 ? threads : std::max(1, cpu.logical_cores);
  chip.name = fmt::format("this host: {}, {} of {} logical cores", cpu.model, n, cpu.logical_cores);
  if (cpu.memory_bytes > 0) chip.memory_gib = static_cast<double>(cpu.memory_bytes) / (1024.0 * 1024.0 * 1024.0);
  if (bandwidth_gbs) {
    chip.bandwidth_gbs = *bandwidth_gbs;
  } else {
    ThreadPool pool(threads);
    chip.bandwidth_gbs = measure_read_bandwidth_gbps(&pool);
  }
  chip.bf16_tflops.reset();
  chip.int8_tops.reset();
  if (cpu.mhz > 0) chip.int8_tops = n * cpu.mhz * 1e6 * int8_ops_per_cycle(cpu) / 1e12;
  return chip;
}

}  // namespace cai::cli
