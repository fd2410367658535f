// The CPU's absorbed MLA under --precision fast, on W_UK / W_UV packed in 16-row groups as the model loads them: each
// head's rows run through the integer group kernels (q_nope and the attention's latent output quantized to int8), near
// the exact result on the file's row-major weights, and a sequence's output is the same bits alone or batched. The
// rows the kernel decodes itself (block-scaled FP8) come out as dequantize_weight_row's.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <random>
#include <vector>

#include "core/weight_row.h"
#include "ops/attn_batch.h"
#include "ops/gemm_weights.h"
#include "hal/cpu/kernels/kernels.h"
#include "hal/cpu/kernels/qdot_groups.h"
#include "hal/hal.h"

namespace cai {
namespace {

using hal::cpu::gaussian;

constexpr int kHeads = 2, kNope = 32, kRope = 16, kLora = 64, kBlock = 4, kSlots = 24;

// Q4_0 rows of [rows, cols] values (gemm_weights.h's make_weights draws at one standard deviation; these weights at
// 0.3 keep the scores' softmax soft).
std::vector<uint8_t> q4_0(const std::vector<float>& v, int64_t rows, int64_t cols) {
  std::vector<uint8_t> out(row_bytes(DType::kQ4_0, cols) * static_cast<size_t>(rows));
  for (int64_t r = 0; r < rows; ++r)
    EXPECT_TRUE(
        quantize_row(DType::kQ4_0, v.data() + r * cols, out.data() + r * row_bytes(DType::kQ4_0, cols), cols).ok());
  return out;
}

// v: each head's W_UV rows (32: whole 16-row groups; 8: two heads share a group).
struct Mla {
  int v;
  hal::MlaParams params{kHeads, kNope, kRope, v, kLora, 0.2f, kBlock};
  std::mt19937 uk_rng{1}, uv_rng{2}, latent_rng{3};
  std::vector<uint8_t> uk = q4_0(gaussian(kHeads * kLora * kNope, uk_rng, 0.3f), kHeads* kLora, kNope);
  std::vector<uint8_t> uv = q4_0(gaussian(kHeads * v * kLora, uv_rng, 0.3f), kHeads* v, kLora);
  std::vector<uint8_t> uk_packed = std::vector<uint8_t>(uk.size()), uv_packed = std::vector<uint8_t>(uv.size());
  std::vector<float> latent = gaussian(kSlots * (kLora + kRope), latent_rng);
  explicit Mla(int v_head_dim = 32) : v(v_head_dim) {
    hal::cpu::pack_row_groups(DType::kQ4_0_R16, uk.data(), uk_packed.data(), kHeads * kLora, kNope, nullptr);
    hal::cpu::pack_row_groups(DType::kQ4_0_R16, uv.data(), uv_packed.data(), kHeads * v, kLora, nullptr);
  }
  // out for the sequences {q_begin, n_q, pos0}, three blocks of the slots each in `tables`.
  std::vector<float> run(hal::Precision precision, bool packed, std::vector<int32_t> seqs, std::vector<int32_t> tables,
                         std::vector<float> q) {
    hal::Device* cpu = hal::Registry::global().find_device("cpu").value();
    const int64_t n_tok = static_cast<int64_t>(q.size()) / (kHeads * (kNope + kRope));
    const hal::AttnBatch batch = test::attn_batch(seqs, tables, 3);
    const DType wt = packed ? DType::kQ4_0_R16 : DType::kQ4_0;
    std::vector<float> out(static_cast<size_t>(n_tok) * kHeads * v);
    hal::OpContext ctx = cpu->op_context();
    ctx.precision = precision;
    const Status st = cpu->ops().attention_mla(
        ctx, params, batch, TensorView::make(q.data(), DType::kF32, {n_tok, kHeads, kNope + kRope}),
        TensorView::make(packed ? uk_packed.data() : uk.data(), wt, {kHeads * kLora, kNope}),
        TensorView::make(packed ? uv_packed.data() : uv.data(), wt, {kHeads * v, kLora}),
        TensorView::make(latent.data(), DType::kF32, {kSlots, kLora + kRope}),
        TensorView::make(out.data(), DType::kF32, {n_tok, kHeads * v}));
    EXPECT_TRUE(st.ok()) << st.to_string();
    return out;
  }
};

// Fast decode of m's sequences on the packed weights against exact decode on the row-major ones.
void expect_fast_near_exact(Mla& m) {
  std::mt19937 rng(4);
  const std::vector<float> q = gaussian(2 * kHeads * (kNope + kRope), rng);
  const std::vector<int32_t> seqs = {0, 1, 9, 1, 1, 5};  // one decode query each, after 9 and 5 cached rows
  const std::vector<int32_t> tables = {5, 4, 3, 2, 0, 1};
  const std::vector<float> exact = m.run(hal::Precision::kExact, false, seqs, tables, q);
  const std::vector<float> fast = m.run(hal::Precision::kFast, true, seqs, tables, q);
  float scale = 0, diff = 0;
  for (size_t i = 0; i < exact.size(); ++i) {
    scale = std::max(scale, std::abs(exact[i]));
    diff = std::max(diff, std::abs(fast[i] - exact[i]));
  }
  ASSERT_GT(scale, 0.1f);
  EXPECT_GT(diff, 0.0f) << "the integer kernels did not run";
  EXPECT_LE(diff, 2e-2f * scale);  // int8 activations, as the dense fast-path twin tests
  const size_t per_tok = static_cast<size_t>(kHeads) * (kNope + kRope);
  const std::vector<float> second = m.run(hal::Precision::kFast, true, {0, 1, 5}, {2, 0, 1},
                                          std::vector<float>(q.begin() + static_cast<int64_t>(per_tok), q.end()));
  ASSERT_EQ(second.size(), fast.size() / 2);
  EXPECT_TRUE(std::equal(second.begin(), second.end(), fast.begin() + static_cast<int64_t>(fast.size() / 2)))
      << "the second sequence alone differs from the same sequence batched";
}

TEST(MlaPacked, FastDecodeOnPackedWeightsIsNearExactAndBatchInvariant) {
  Mla m;
  expect_fast_near_exact(m);
}

// A head's 8 W_UV rows cut a packed 16-row group: those rows are decoded instead (W_UK's still run packed).
TEST(MlaPacked, HeadsThatCutAPackedGroupDecodeTheirRows) {
  Mla m(8);
  expect_fast_near_exact(m);
}

// Packed weights have no exact kernel: the exact path refuses them instead of reading the groups as rows.
TEST(MlaPacked, ExactPrecisionRefusesPackedWeights) {
  Mla m;
  hal::Device* cpu = hal::Registry::global().find_device("cpu").value();
  std::mt19937 rng(5);
  std::vector<float> q = gaussian(kHeads * (kNope + kRope), rng), out(kHeads * m.v);
  std::vector<int32_t> seqs = {0, 1, 9}, tables = {5, 4, 3};
  hal::AttnBatch batch;
  batch.seqs = TensorView::make(seqs.data(), DType::kI32, {1, 3});
  batch.block_tables = TensorView::make(tables.data(), DType::kI32, {1, 3});
  batch.max_q = 1;
  batch.max_ctx = 10;
  const Status st = cpu->ops().attention_mla(
      cpu->op_context(), m.params, batch, TensorView::make(q.data(), DType::kF32, {1, kHeads, kNope + kRope}),
      TensorView::make(m.uk_packed.data(), DType::kQ4_0_R16, {kHeads * kLora, kNope}),
      TensorView::make(m.uv_packed.data(), DType::kQ4_0_R16, {kHeads * m.v, kLora}),
      TensorView::make(m.latent.data(), DType::kF32, {kSlots, kLora + kRope}),
      TensorView::make(out.data(), DType::kF32, {1, kHeads * m.v}));
  EXPECT_EQ(st.code(), StatusCode::kUnsupported) << st.to_string();
}

// Block-scaled FP8 (DeepSeek checkpoints' W_UK / W_UV) through weight_rows_f32: the active ISA's vector decoder, then
// the block scales, gives dequantize_weight_row's bits for every row, past a partial last column block too.
TEST(WeightRowsF32, BlockScaledFp8DecodesAsDequantizeWeightRow) {
  constexpr int64_t kRows = 300, kCols = 200;
  std::mt19937 rng(9);
  std::vector<uint8_t> codes(static_cast<size_t>(kRows * kCols));
  for (uint8_t& c : codes) {
    c = static_cast<uint8_t>(rng());
    if ((c & 0x7F) == 0x7F) c ^= 1;  // not e4m3's NaN
  }
  std::vector<float> scales(static_cast<size_t>(3 * 2));
  for (size_t i = 0; i < scales.size(); ++i) scales[i] = 0.002f * static_cast<float>(i + 1);
  TensorView w = TensorView::make(codes.data(), DType::kF8_E4M3, {kRows, kCols});
  w.scale = scales.data();
  std::vector<float> got(static_cast<size_t>(7 * kCols)), want(static_cast<size_t>(kCols));
  for (int64_t r0 = 0; r0 < kRows; r0 += 7) {
    const int nt = static_cast<int>(std::min<int64_t>(7, kRows - r0));
    const float* rows = hal::cpu::weight_rows_f32(w, r0, nt, got.data());
    for (int t = 0; t < nt; ++t) {
      dequantize_weight_row(w, r0 + t, want.data());
      for (int64_t c = 0; c < kCols; ++c)
        ASSERT_EQ(rows[t * kCols + c], want[static_cast<size_t>(c)]) << "row " << r0 + t << " col " << c;
    }
  }
}

}  // namespace
}  // namespace cai
