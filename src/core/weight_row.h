// One weight row as F32, whatever its dtype, including DeepSeek FP8 128×128 block scales (TensorView::scale).
#pragma once

#include "core/tensor_view.h"

namespace cai {

inline constexpr int64_t kFp8ScaleBlock = 128;

// dst[0 .. w.cols()) = dequantized row r of w (× its block scale when w.scale is set).
void dequantize_weight_row(const TensorView& w, int64_t r, float* dst);
// dst (row r of w, decoded) times its block scales; nothing where w has none. For a decoder of its own (a kernel
// table's) followed by the scales: the same bits as dequantize_weight_row.
void apply_block_scales(const TensorView& w, int64_t r, float* dst);

}  // namespace cai
