// Tensor-parallel slicing on the host: whole rows or whole quant / scale blocks where they line up, F32 otherwise.
#include "model/tensor_shard.h"

#include <cstring>

#include "core/weight_row.h"

namespace cai {

ShardAxis shard_axis(std::string_view name) {
  static constexpr std::string_view kRows[] = {
      ".attn_q.",   ".attn_k.", ".attn_v.",         ".attn_q_b.",     ".attn_k_b.",      ".attn_v_b.",
      ".ffn_gate.", ".ffn_up.", ".ffn_gate_shexp.", ".ffn_up_shexp.", ".ffn_gate_exps.", ".ffn_up_exps."};
  static constexpr std::string_view kCols[] = {".attn_output.", ".ffn_down.", ".ffn_down_shexp.", ".ffn_down_exps."};
  if (name == "output.weight") return ShardAxis::kRows;  // vocabulary rows
  for (std::string_view s : kRows)
    if (name.find(s) != std::string_view::npos) return ShardAxis::kRows;
  for (std::string_view s : kCols)
    if (name.find(s) != std::string_view::npos) return ShardAxis::kCols;
  return ShardAxis::kNone;
}

namespace {

bool on_block(int64_t i, int64_t block) { return i % block == 0; }

}  // namespace

Result<HostTensor> shard_tensor(const std::string& name, const std::vector<TensorView>& slabs, ShardAxis axis, int rank,
                                int n, bool copy_bytes) {
  if (slabs.empty()) return invalid_argument("'{}': no data to shard", name);
  const TensorView& first = slabs.front();
  const bool one_dim = first.n_dims == 1;
  const int64_t rows = one_dim ? 1 : first.rows(), cols = first.cols();
  if (axis == ShardAxis::kRows && one_dim) axis = ShardAxis::kCols;  // a bias: its only axis
  int64_t r0 = 0, nr = rows, c0 = 0, nc = cols;
  if (axis == ShardAxis::kRows) {
    if (rows % n) return invalid_argument("'{}': {} rows do not split over {} tensor-parallel ranks", name, rows, n);
    nr = rows / n, r0 = nr * rank;
  } else if (axis == ShardAxis::kCols) {
    if (cols % n) return invalid_argument("'{}': {} columns do not split over {} tensor-parallel ranks", name, cols, n);
    nc = cols / n, c0 = nc * rank;
  }
  const int block = dtype_info(first.dtype).block_elems;
  bool keep = on_block(c0, block) && on_block(nc, block);
  if (first.scale)
    keep = keep && on_block(r0, kFp8ScaleBlock) && (on_block(nr, kFp8ScaleBlock) || r0 + nr == rows) &&
           on_block(c0, kFp8ScaleBlock) && (on_block(nc, kFp8ScaleBlock) || c0 + nc == cols);
  HostTensor t;
  t.name = name;
  const DType dtype = keep ? first.dtype : DType::kF32;
  const size_t out_row = row_bytes(dtype, nc);
  if (copy_bytes) t.bytes.resize(out_row * static_cast<size_t>(nr) * slabs.size());
  uint8_t* out = t.bytes.data();
  std::vector<float> row(static_cast<size_t>(cols));
  for (const TensorView& slab : slabs) {
    for (int64_t r = r0; copy_bytes && r < r0 + nr; ++r, out += out_row) {
      if (keep) {
        std::memcpy(out, static_cast<const uint8_t*>(slab.row(one_dim ? 0 : r)) + row_bytes(dtype, c0), out_row);
      } else {
        dequantize_weight_row(one_dim ? slab.reshaped({1, cols}) : slab, r, row.data());
        std::memcpy(out, row.data() + c0, out_row);
      }
    }
    if (keep && slab.scale) {  // the scale grid's rows and columns of this slice
      const int64_t grid_cols = (cols + kFp8ScaleBlock - 1) / kFp8ScaleBlock;
      for (int64_t gr = r0 / kFp8ScaleBlock; gr < (r0 + nr + kFp8ScaleBlock - 1) / kFp8ScaleBlock; ++gr)
        for (int64_t gc = c0 / kFp8ScaleBlock; gc < (c0 + nc + kFp8ScaleBlock - 1) / kFp8ScaleBlock; ++gc)
          t.scales.push_back(slab.scale[gr * grid_cols + gc]);
    }
  }
  const int64_t n_slabs = static_cast<int64_t>(slabs.size());
  if (one_dim)
    t.view = TensorView::make(t.bytes.data(), dtype, {nc});
  else if (first.n_dims == 2 && n_slabs == 1)
    t.view = TensorView::make(t.bytes.data(), dtype, {nr, nc});
  else
    t.view = TensorView::make(t.bytes.data(), dtype, {n_slabs, nr, nc});
  if (!t.scales.empty()) t.view.scale = t.scales.data();
  return t;
}

}  // namespace cai
