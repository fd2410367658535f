// The ARM64 integer dot-product table for CPUs with the dot-product instructions (sdot; Kunpeng 920, Neoverse N1 and
// later), compiled with armv8.2-a+dotprod.
#include "hal/cpu/kernels/qdot_kernels.h"

#if defined(__aarch64__) && defined(__ARM_FEATURE_DOTPROD)

#include "hal/cpu/kernels/qdot_neon_table.h"

namespace cai::hal::cpu {

const QDotKernels& qdot_kernels_dotprod() {
  static const QDotKernels table = neon_qdot_table();
  return table;
}

}  // namespace cai::hal::cpu

#endif
