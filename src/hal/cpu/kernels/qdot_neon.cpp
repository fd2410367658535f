// The ARM64 integer dot-product table for plain NEON (every ARM64 CPU).
#include "hal/cpu/kernels/qdot_kernels.h"

#if defined(__aarch64__)

#include "hal/cpu/kernels/qdot_neon_table.h"

namespace cai::hal::cpu {

const QDotKernels& qdot_kernels_neon() {
  static const QDotKernels table = neon_qdot_table();
  return table;
}

}  // namespace cai::hal::cpu

#endif
