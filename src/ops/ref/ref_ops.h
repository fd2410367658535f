// Scalar ground truth for every op: plain loops, double accumulation, no threads. Backends are tested against it.
#pragma once

#include "hal/op_table.h"

namespace cai::ops::ref {

// An OpTable whose entries are the reference implementations (ctx is ignored).
const hal::OpTable& op_table();

}  // namespace cai::ops::ref
