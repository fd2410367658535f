// The ARM64 integer dot-product table for CPUs with the int8 matrix-multiply instructions (smmla; Neoverse N2 / V1 and
// later, Graviton 3): the dotprod table plus 16-row tiles (qdot_wide_i8mm.h) for batches of 16 activation rows,
// compiled with armv8.2-a+dotprod+i8mm.
#include "hal/cpu/kernels/qdot_kernels.h"

#if defined(__aarch64__) && defined(__ARM_FEATURE_DOTPROD) && defined(__ARM_FEATURE_MATMUL_INT8)

#include "hal/cpu/kernels/qdot_neon_table.h"
#include "hal/cpu/kernels/qdot_wide_i8mm.h"

namespace cai::hal::cpu {

const QDotKernels& qdot_kernels_i8mm() {
  static const QDotKernels table = [] {
    QDotKernels k = neon_qdot_table();
    register_qdot_wide_i8mm(k);
    return k;
  }();
  return table;
}

}  // namespace cai::hal::cpu

#endif
