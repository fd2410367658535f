// dequantize_weight_row: row decode plus per-128-column block scales.
#include "core/weight_row.h"

#include "core/quant.h"

namespace cai {

void dequantize_weight_row(const TensorView& w, int64_t r, float* dst) {
  const int64_t cols = w.cols();
  dequantize_row(w.dtype, w.row(r), dst, cols);
  if (!w.scale) return;
  const int64_t n_col_blocks = (cols + kFp8ScaleBlock - 1) / kFp8ScaleBlock;
  const float* srow = w.scale + (r / kFp8ScaleBlock) * n_col_blocks;
  for (int64_t c = 0; c < cols; ++c) dst[c] *= srow[c / kFp8ScaleBlock];
}

}  // namespace cai
