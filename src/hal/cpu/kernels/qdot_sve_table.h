// The ARM64 integer dot-product table for SVE at the vector length the including file is compiled for
// (qdot_sve256.cpp, qdot_sve512.cpp): the i8mm table (NEON activation quantizer and group kernels), with the int8
// group kernels (qdot_groups_simd.h) and the 16-row smmla tiles (qdot_wide_sve.h) on SVE registers instead. Q8_0
// against 16-bit activations keeps its NEON kernel.
#pragma once

#include "hal/cpu/kernels/qdot_groups_simd.h"
#include "hal/cpu/kernels/qdot_wide_sve.h"

namespace cai::hal::cpu {
namespace {

inline QDotKernels sve_qdot_table() {
  QDotKernels k = qdot_kernels_i8mm();
  register_qdot_groups_int8(k);
  register_qdot_wide_sve(k);
  return k;
}

}  // namespace
}  // namespace cai::hal::cpu
