// The SIMD integer dot-product table of the including file's ISA: qdot_avx2.cpp includes it compiled for AVX2,
// qdot_avx512vnni.cpp for AVX-512 VNNI, and the same kernels pick up that file's int8 product (qdot_avx2.h).
#pragma once

// GCC 12's intrinsic headers trip -W(maybe-)uninitialized on their own _mm*_undefined_* helpers (GCC bug 105593).
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#include "hal/cpu/kernels/qdot_avx2.h"
#include "hal/cpu/kernels/qdot_groups_simd.h"
#include "hal/cpu/kernels/qdot_k_avx2.h"
#include "hal/cpu/kernels/qdot_wide_tile.h"
#include "hal/cpu/kernels/quant_act_simd.h"

namespace cai::hal::cpu {
namespace {

inline QDotKernels simd_qdot_table() {
  QDotKernels k{};
  register_qdot_legacy_simd(k);
  register_qdot_k_simd(k);
  register_qdot_groups_simd(k);
  register_qdot_wide_simd(k);
  k.quantize = quantize_act_row_simd;
  k.quantize16 = quantize_act_row_q16_simd;
  return k;
}

}  // namespace
}  // namespace cai::hal::cpu
