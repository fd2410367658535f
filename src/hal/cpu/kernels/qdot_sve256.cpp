// The ARM64 integer dot-product table for CPUs with 256-bit SVE vectors (qdot_sve_table.h), compiled with
// armv8.2-a+dotprod+i8mm+sve and -msve-vector-bits=256: it runs only where the vector length is 256 bits.
#include "hal/cpu/kernels/qdot_kernels.h"

#if defined(__aarch64__) && defined(__ARM_FEATURE_SVE_BITS) && __ARM_FEATURE_SVE_BITS == 256

#include "hal/cpu/kernels/qdot_sve_table.h"

namespace cai::hal::cpu {

const QDotKernels& qdot_kernels_sve256() {
  static const QDotKernels table = sve_qdot_table();
  return table;
}

}  // namespace cai::hal::cpu

#endif
