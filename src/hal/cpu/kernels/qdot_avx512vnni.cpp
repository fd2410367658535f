// The AVX-512 VNNI integer dot-product table: the kernels of qdot_simd_table.h compiled with vpdpbusd
// (on 256-bit vectors) as their int8 product, and 512-bit vpdpwssd for Q8_0's int16 activations.
#include "hal/cpu/kernels/qdot_kernels.h"

#if defined(__AVX512VNNI__) && defined(__AVX512VL__) && defined(__FMA__) && defined(__F16C__)

#include "hal/cpu/kernels/qdot_simd_table.h"

namespace cai::hal::cpu {

const QDotKernels& qdot_kernels_avx512vnni() {
  static const QDotKernels table = simd_qdot_table();
  return table;
}

}  // namespace cai::hal::cpu

#endif
