// dequantize_weight_row: row decode plus per-128-column block scales.
#include "core/weight_row.h"

#include <algorithm>

#include "core/quant.h"

namespace cai {

void dequantize_weight_row(const TensorView& w, int64_t r, float* dst) {
  dequantize_row(w.dtype, w.row(r), dst, w.cols());
  apply_block_scales(w, r, dst);
}

void apply_block_scales(const TensorView& w, int64_t r, float* dst) {
  if (!w.scale) return;
  const int64_t cols = w.cols(), n_col_blocks = (cols + kFp8ScaleBlock - 1) / kFp8ScaleBlock;
  const float* srow = w.scale + (r / kFp8ScaleBlock) * n_col_blocks;
  for (int64_t b = 0; b < n_col_blocks; ++b) {
    const float s = srow[b];
    for (int64_t c = b * kFp8ScaleBlock; c < std::min(cols, (b + 1) * kFp8ScaleBlock); ++c) dst[c] *= s;
  }
}

}  // namespace cai
