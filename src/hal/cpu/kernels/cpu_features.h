// Run-time ISA detection for the CPU kernels (x86-64 and ARM64), with the CAI_CPU_ISA=scalar|avx2|avx512|neon|dotprod|
// i8mm|sve override for testing.
#pragma once

#include <cstdint>
#include <optional>
#include <string_view>
#include <vector>

#include "core/status.h"

namespace cai::hal::cpu {

// Kernel families of each architecture, ordered within it: each implies the ones before it of the same architecture,
// and scalar runs everywhere.
enum class CpuIsa : uint8_t {
  kScalar,   // portable C++ (any architecture)
  kAvx2,     // x86-64: AVX2 + FMA + F16C
  kAvx512,   // x86-64: AVX-512 F/BW/VL/DQ + FMA + F16C
  kNeon,     // ARM64: Advanced SIMD (every ARM64 CPU)
  kDotprod,  // ARM64: NEON + the dot-product instructions (sdot / udot)
  kI8mm,     // ARM64: dotprod + the int8 matrix-multiply instructions (smmla; ARMv8.6 i8mm)
  kSve,      // ARM64: i8mm + SVE with 256- or 512-bit vectors (Neoverse V1, Graviton 3, A64FX-class widths)
};

std::string_view cpu_isa_name(CpuIsa isa);
std::optional<CpuIsa> cpu_isa_from_name(std::string_view name);
// The best family this CPU and this build support.
CpuIsa best_cpu_isa();
// Whether this CPU runs `isa`: scalar, or a family of its architecture up to best_cpu_isa().
bool cpu_isa_available(CpuIsa isa);
// The families this build's architecture has kernels for, scalar first (whether or not this CPU has them all).
std::vector<CpuIsa> cpu_isas_of_this_architecture();
// The family kernels use now: best_cpu_isa(), lowered by CAI_CPU_ISA (read once) or set_active_cpu_isa().
CpuIsa active_cpu_isa();
// Forces a family (tests, benches). unsupported if this CPU lacks it.
Status set_active_cpu_isa(CpuIsa isa);
// This CPU's SVE vector length in bits; 0 without SVE (and off ARM64).
int sve_vector_bits();

}  // namespace cai::hal::cpu
