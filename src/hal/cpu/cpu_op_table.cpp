// The CPU backend's OpTable: every op has a kernel here.
#include "hal/cpu/cpu_backend.h"
#include "hal/cpu/kernels/kernels.h"

namespace cai::hal::cpu {

const OpTable& cpu_op_table() {
  static const OpTable table = CAI_OP_TABLE_OF_KERNELS();
  return table;
}

}  // namespace cai::hal::cpu
