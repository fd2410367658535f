// The AVX2 integer dot-product table: the kernels of qdot_simd_table.h compiled with vpmaddubsw +
// vpmaddwd as their int8 product.
#include "hal/cpu/kernels/qdot_kernels.h"

#if defined(__AVX2__) && defined(__FMA__) && defined(__F16C__)

#include "hal/cpu/kernels/qdot_simd_table.h"

namespace cai::hal::cpu {

const QDotKernels& qdot_kernels_avx2() {
  static const QDotKernels table = simd_qdot_table();
  return table;
}

}  // namespace cai::hal::cpu

#endif
