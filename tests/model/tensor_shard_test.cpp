// Tensor-parallel slices (model/tensor_shard.h): which axis each canonical name splits along, and that rank r's slice
// dequantizes to exactly the rows / columns of the whole tensor it stands for, whether it keeps the file's blocks
// (Q8_0, Q4_K, FP8 with 128 x 128 scales) or falls back to F32 where a boundary cuts a block.
#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "core/quant.h"
#include "core/weight_row.h"
#include "model/tensor_shard.h"

namespace cai {
namespace {

TEST(ShardAxis, FollowsTheProjections) {
  EXPECT_EQ(shard_axis("blk.0.attn_q.weight"), ShardAxis::kRows);
  EXPECT_EQ(shard_axis("blk.0.attn_k.bias"), ShardAxis::kRows);
  EXPECT_EQ(shard_axis("blk.3.attn_k_b.weight"), ShardAxis::kRows);
  EXPECT_EQ(shard_axis("blk.3.ffn_up_exps.weight"), ShardAxis::kRows);
  EXPECT_EQ(shard_axis("output.weight"), ShardAxis::kRows);
  EXPECT_EQ(shard_axis("blk.0.attn_output.weight"), ShardAxis::kCols);
  EXPECT_EQ(shard_axis("blk.3.ffn_down_exps.weight"), ShardAxis::kCols);
  EXPECT_EQ(shard_axis("blk.3.ffn_down_shexp.weight"), ShardAxis::kCols);
  for (const char* whole :
       {"blk.0.attn_norm.weight", "blk.3.attn_q_a.weight", "blk.3.attn_kv_a_mqa.weight", "blk.3.ffn_gate_inp.weight",
        "blk.3.exp_probs_b.bias", "token_embd.weight", "output_norm.weight"})
    EXPECT_EQ(shard_axis(whole), ShardAxis::kNone) << whole;
}

// A [rows, cols] tensor of `dtype` with distinct values, and its dequantized floats.
struct Whole {
  std::vector<uint8_t> bytes;
  TensorView view;
  std::vector<float> values;  // dequantized, row-major
};

Whole make(DType dtype, int64_t rows, int64_t cols) {
  Whole w;
  std::vector<float> src(static_cast<size_t>(rows * cols));
  for (size_t i = 0; i < src.size(); ++i) src[i] = std::sin(0.37f * static_cast<float>(i)) * (1.0f + (i % 7));
  const size_t row = row_bytes(dtype, cols);
  w.bytes.resize(row * static_cast<size_t>(rows));
  for (int64_t r = 0; r < rows; ++r)
    EXPECT_TRUE(quantize_row(dtype, src.data() + r * cols, w.bytes.data() + r * row, cols).ok());
  w.view = TensorView::make(w.bytes.data(), dtype, {rows, cols});
  w.values.resize(src.size());
  for (int64_t r = 0; r < rows; ++r) dequantize_weight_row(w.view, r, w.values.data() + r * cols);
  return w;
}

// Every value of rank r's slice equals the whole tensor's value at the place it came from.
void expect_slice(const Whole& w, const HostTensor& t, ShardAxis axis, int rank, int n) {
  const int64_t rows = w.view.rows(), cols = w.view.cols();
  const int64_t nr = axis == ShardAxis::kRows ? rows / n : rows, nc = axis == ShardAxis::kCols ? cols / n : cols;
  const int64_t r0 = axis == ShardAxis::kRows ? nr * rank : 0, c0 = axis == ShardAxis::kCols ? nc * rank : 0;
  ASSERT_EQ(t.view.rows(), nr);
  ASSERT_EQ(t.view.cols(), nc);
  std::vector<float> row(static_cast<size_t>(nc));
  for (int64_t r = 0; r < nr; ++r) {
    dequantize_weight_row(t.view, r, row.data());
    for (int64_t c = 0; c < nc; ++c)
      ASSERT_EQ(row[static_cast<size_t>(c)], w.values[static_cast<size_t>((r0 + r) * cols + c0 + c)]) << r << "," << c;
  }
}

TEST(ShardTensor, BlockTypesKeepTheirBlocksWhereBoundariesAlign) {
  for (DType dtype : {DType::kQ8_0, DType::kQ4_K, DType::kBF16, DType::kF32}) {
    SCOPED_TRACE(dtype_name(dtype));
    const Whole w = make(dtype, 8, 512);
    for (ShardAxis axis : {ShardAxis::kRows, ShardAxis::kCols})
      for (int rank = 0; rank < 2; ++rank) {
        Result<HostTensor> t = shard_tensor("t", {w.view}, axis, rank, 2);
        ASSERT_TRUE(t.ok()) << t.status().to_string();
        EXPECT_EQ(t->view.dtype, dtype);  // 256 columns a rank: whole blocks of 32 and of 256
        expect_slice(w, *t, axis, rank, 2);
      }
  }
}

TEST(ShardTensor, ABoundaryInsideABlockGivesExactF32) {
  const Whole w = make(DType::kQ4_K, 4, 512);  // four ranks: 128 columns each, half a Q4_K block
  for (int rank = 0; rank < 4; ++rank) {
    Result<HostTensor> t = shard_tensor("t", {w.view}, ShardAxis::kCols, rank, 4);
    ASSERT_TRUE(t.ok()) << t.status().to_string();
    EXPECT_EQ(t->view.dtype, DType::kF32);
    expect_slice(w, *t, ShardAxis::kCols, rank, 4);
  }
}

// FP8 with one scale per 128 x 128 block: 256 x 256 splits into whole scale blocks (FP8 kept, the scale grid's rows
// or columns taken); into 64-wide slices it cannot (F32).
TEST(ShardTensor, Fp8KeepsWholeScaleBlocks) {
  Whole w = make(DType::kF8_E4M3, 256, 256);
  const std::vector<float> scales = {0.5f, 2.0f, 4.0f, 0.25f};
  w.view.scale = scales.data();
  for (int64_t r = 0; r < 256; ++r) dequantize_weight_row(w.view, r, w.values.data() + r * 256);
  for (ShardAxis axis : {ShardAxis::kRows, ShardAxis::kCols}) {
    for (int rank = 0; rank < 2; ++rank) {
      Result<HostTensor> t = shard_tensor("t", {w.view}, axis, rank, 2);
      ASSERT_TRUE(t.ok());
      EXPECT_EQ(t->view.dtype, DType::kF8_E4M3);
      EXPECT_EQ(t->scales.size(), 2u);
      expect_slice(w, *t, axis, rank, 2);
    }
    Result<HostTensor> t = shard_tensor("t", {w.view}, axis, 1, 4);
    ASSERT_TRUE(t.ok());
    EXPECT_EQ(t->view.dtype, DType::kF32);
    expect_slice(w, *t, axis, 1, 4);
  }
}

// Stacked experts: each expert's rows are sliced, the result stays [E, rows / n, cols]; biases split their only axis.
TEST(ShardTensor, ExpertsAndBiases) {
  const Whole a = make(DType::kQ8_0, 6, 64), b = make(DType::kQ8_0, 6, 64);
  Result<HostTensor> t = shard_tensor("blk.1.ffn_up_exps.weight", {a.view, b.view}, ShardAxis::kRows, 1, 2);
  ASSERT_TRUE(t.ok());
  ASSERT_EQ(t->view.n_dims, 3);
  EXPECT_EQ(t->view.dim(0), 2);
  EXPECT_EQ(t->view.dim(1), 3);
  HostTensor second;
  second.view = t->view.slice(1);
  expect_slice(b, second, ShardAxis::kRows, 1, 2);
  std::vector<float> bias = {1, 2, 3, 4, 5, 6};
  Result<HostTensor> half =
      shard_tensor("blk.0.attn_q.bias", {TensorView::make(bias.data(), DType::kF32, {6})}, ShardAxis::kRows, 1, 2);
  ASSERT_TRUE(half.ok());
  ASSERT_EQ(half->view.n_dims, 1);
  EXPECT_EQ(std::vector<float>(half->view.as<float>(), half->view.as<float>() + 3), (std::vector<float>{4, 5, 6}));
}

TEST(ShardTensor, AnAxisThatDoesNotDivideIsNamed) {
  const Whole w = make(DType::kF32, 6, 10);
  Result<HostTensor> t = shard_tensor("blk.0.ffn_down.weight", {w.view}, ShardAxis::kCols, 0, 4);
  ASSERT_FALSE(t.ok());
  EXPECT_NE(t.status().message().find("blk.0.ffn_down.weight"), std::string::npos);
  EXPECT_NE(t.status().message().find("10 columns"), std::string::npos);
}

}  // namespace
}  // namespace cai
