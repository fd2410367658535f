// The built-in CPU backend: host memory, a thread pool, and kernels chosen for this CPU's ISA at run time.
#pragma once

#include <memory>

#include "hal/hal.h"

namespace cai::hal::cpu {

std::unique_ptr<Backend> make_cpu_backend();
// Resize the CPU device's thread pool (n <= 0: one per hardware thread). Call before running work.
void set_cpu_threads(int n_threads);
// The kernels of the CPU backend (also what plugins without an op may fall back to in tests).
const OpTable& cpu_op_table();

}  // namespace cai::hal::cpu
