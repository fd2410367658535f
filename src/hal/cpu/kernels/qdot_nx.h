// The dispatch of the NX-templated integer kernels (one template instance per activation-row count) behind the
// QDotFn / QDot16Fn pointers of a QDotKernels table, for every ISA's table. Internal linkage.
#pragma once

#include "hal/cpu/kernels/gemm_kernels.h"
#include "hal/cpu/kernels/qdot_kernels.h"

namespace cai::hal::cpu {
namespace {

// K<nx>::run(args...) for a runtime nx in 1..kMaxDotRows: the dispatch of every NX-templated kernel.
template <template <int> class K, class... Args>
void run_nx(int nx, Args... args) {
  switch (nx) {
    case 1: return K<1>::run(args...);
    case 2: return K<2>::run(args...);
    case 3: return K<3>::run(args...);
    case 4: return K<4>::run(args...);
    case 5: return K<5>::run(args...);
    case 6: return K<6>::run(args...);
    case 7: return K<7>::run(args...);
    default: return K<8>::run(args...);
  }
}
static_assert(kMaxDotRows == 8);

// A kernel template K<NX> behind one QDotFn / QDot16Fn.
template <template <int> class K>
void dot_any_nx(const uint8_t* w, const ActBlockQ8* x, int64_t ldx, int nx, int64_t in, float* out) {
  run_nx<K>(nx, w, x, ldx, in, out);
}
template <template <int> class K>
void dot16_any_nx(const uint8_t* w, const ActBlockQ16* x, const float* xd, int64_t ldx, int nx, int64_t in,
                  float* out) {
  run_nx<K>(nx, w, x, xd, ldx, in, out);
}

}  // namespace
}  // namespace cai::hal::cpu
