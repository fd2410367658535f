// Run-time x86 ISA detection for the CPU kernels, with the CAI_CPU_ISA=scalar|avx2|avx512 override for testing.
#pragma once

#include <cstdint>
#include <optional>
#include <string_view>

#include "core/status.h"

namespace cai::hal::cpu {

// Kernel families, ordered: each implies the ones before it.
enum class CpuIsa : uint8_t {
  kScalar,  // portable C++ (any architecture)
  kAvx2,    // AVX2 + FMA + F16C
  kAvx512,  // AVX-512 F/BW/VL/DQ + FMA + F16C
};

std::string_view cpu_isa_name(CpuIsa isa);
std::optional<CpuIsa> cpu_isa_from_name(std::string_view name);
// The best family this CPU and this build support.
CpuIsa best_cpu_isa();
// The family kernels use now: best_cpu_isa(), lowered by CAI_CPU_ISA (read once) or set_active_cpu_isa().
CpuIsa active_cpu_isa();
// Forces a family (tests, benches). unsupported if this CPU lacks it.
Status set_active_cpu_isa(CpuIsa isa);

}  // namespace cai::hal::cpu
