// CPU dense GEMM: y[n, out] = x[n, in] · w[out, in]^T (+ bias) for every weight dtype, F32 activations.
#pragma once

#include "core/status.h"
#include "core/tensor_view.h"
#include "hal/op_table.h"

namespace cai::hal::cpu {

// w [out, in] any dtype with a kernel (F32, F16, BF16, every GGUF quant type, F8_E4M3 with or without w.scale block
// scales; under ctx.precision fast also the packed row groups of qdot_groups.h); x [n, in] F32; bias [out] F32 or
// null; y [n, out] F32. Exact: weights are dequantized exactly per block and accumulated in F32; fast: integer dot
// products against quantized activations where qdot_kernels.h has a kernel for the dtype. ctx.pool (may be null) splits
// the work. Shape / dtype problems → Status.
Status cpu_dense_gemm(const hal::OpContext& ctx, const TensorView& w, const TensorView& x, const TensorView* bias,
                      const TensorView& y);

}  // namespace cai::hal::cpu
