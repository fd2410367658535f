// The ARM64 integer dot-product table for CPUs with 512-bit SVE vectors (qdot_sve_table.h), compiled with
// armv8.2-a+dotprod+i8mm+sve and -msve-vector-bits=512: it runs only where the vector length is 512 bits.
#include "hal/cpu/kernels/qdot_kernels.h"

#if defined(__aarch64__) && defined(__ARM_FEATURE_SVE_BITS) && __ARM_FEATURE_SVE_BITS == 512

#include "hal/cpu/kernels/qdot_sve_table.h"

namespace cai::hal::cpu {

const QDotKernels& qdot_kernels_sve512() {
  static const QDotKernels table = sve_qdot_table();
  return table;
}

}  // namespace cai::hal::cpu

#endif
