// The ARM64 integer dot-product table of the including file's ISA: the 16-row group kernels (qdot_groups_simd.h) and
// the activation quantizer on NEON, the row-major kernels (weights whose rows are not a multiple of 16) scalar.
// qdot_neon.cpp includes it for plain NEON, qdot_dotprod.cpp compiled with dotprod (sdot).
#pragma once

#include "hal/cpu/kernels/qdot_groups_simd.h"
#include "hal/cpu/kernels/quant_act_neon.h"

namespace cai::hal::cpu {
namespace {

inline QDotKernels neon_qdot_table() {
  QDotKernels k = qdot_kernels_scalar();
  register_qdot_groups_simd(k);
  k.quantize = quantize_act_row_neon;
  k.quantize16 = quantize_act_row_q16_neon;
  return k;
}

}  // namespace
}  // namespace cai::hal::cpu
