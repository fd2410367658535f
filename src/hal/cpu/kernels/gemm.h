// CPU dense GEMM: y[n, out] = x[n, in] · w[out, in]^T (+ bias) for every weight dtype, F32 activations.
#pragma once

#include "core/status.h"
#include "core/tensor_view.h"
#include "hal/op_table.h"

namespace cai::hal::cpu {

// w [out, in] any dtype with a kernel (F32, F16, BF16, Q8_0, Q4_0, Q4_K, Q5_K, Q6_K, F8_E4M3 with or without
// w.scale block scales); x [n, in] F32; bias [out] F32 or null; y [n, out] F32. Weights are dequantized exactly
// per block and accumulated in F32. ctx.pool (may be null) splits the work. Shape / dtype problems → Status.
Status cpu_dense_gemm(const hal::OpContext& ctx, const TensorView& w, const TensorView& x, const TensorView* bias,
                      const TensorView& y);

}  // namespace cai::hal::cpu
