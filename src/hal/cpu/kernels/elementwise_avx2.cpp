// elementwise_loops.h built for AVX2 (CMake gives this file its ISA's flags and -ffp-contract=off).
#include "hal/cpu/kernels/gemm_kernels.h"

#if defined(__AVX2__) && defined(__FMA__)
#include "hal/cpu/kernels/elementwise_loops.h"

namespace cai::hal::cpu {

void silu_mul_avx2(const float* gate, const float* up, float* out, int64_t n) { silu_mul_loop(gate, up, out, n); }
void softmax_row_avx2(float* x, int64_t n) { softmax_row_loop(x, n); }

}  // namespace cai::hal::cpu
#endif
