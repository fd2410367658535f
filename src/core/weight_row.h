// One weight row as F32, whatever its dtype, including DeepSeek FP8 128×128 block scales (TensorView::scale).
#pragma once

#include "core/tensor_view.h"

namespace cai {

inline constexpr int64_t kFp8ScaleBlock = 128;

// dst[0 .. w.cols()) = dequantized row r of w (× its block scale when w.scale is set).
void dequantize_weight_row(const TensorView& w, int64_t r, float* dst);

}  // namespace cai
