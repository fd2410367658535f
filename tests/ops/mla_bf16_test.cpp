// The CPU's absorbed MLA with BF16 products over the cache (--precision fast on CPUs with AVX-512 BF16 or ARM64's BF16
// extension): the kernels against F32 sums of the same BF16-rounded values, and the op near its exact result and batch
// invariant. On a CPU without them the fast op must give the exact op's bits (it keeps the F32 products).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <random>
#include <vector>

#include "hal/cpu/kernels/kernels.h"
#include "hal/cpu/kernels/mla_bf16.h"
#include "hal/hal.h"
#include "ops/attn_batch.h"
#include "ops/gemm_weights.h"

namespace cai::mla_bf16_test {  // a namespace of its own: the unity build compiles the MLA tests together
namespace {

using hal::cpu::gaussian;

// x rounded to BF16 (nearest even) and back: what the kernels multiply.
float bf16_round(float x) {
  uint32_t u;
  std::memcpy(&u, &x, 4);
  u = (u + 0x7fffu + ((u >> 16) & 1u)) & 0xffff0000u;
  std::memcpy(&x, &u, 4);
  return x;
}

TEST(MlaBf16Kernels, DotsAndAccumulationsMatchF32SumsOfTheRoundedValues) {
  const hal::cpu::MlaBf16Kernels* k = hal::cpu::mla_bf16_kernels();
  if (!k) GTEST_SKIP() << "this CPU has no BF16 kernels (the op-level test below checks the F32 fallback)";
  std::mt19937 rng(11);
  constexpr int kQ = 7, kRows = 13, kN = 96, kLd = 100;  // 7 queries: a 4-tile and 3 singles; 13 rows: odd
  const std::vector<float> q = gaussian(kQ * kN, rng), rows = gaussian(kRows * kLd, rng),
                           a = gaussian(kQ * kRows, rng, 0.3f);
  std::vector<uint16_t> qb(kQ * kN), buf((kRows + 1) * kN);
  for (int i = 0; i < kQ; ++i) k->to_bf16(q.data() + i * kN, kN, qb.data() + i * kN);
  for (int i = 0; i < kQ * kN; ++i) {
    const uint32_t bits = static_cast<uint32_t>(qb[static_cast<size_t>(i)]) << 16;
    float back;
    std::memcpy(&back, &bits, 4);
    ASSERT_EQ(back, bf16_round(q[static_cast<size_t>(i)])) << i;
  }
  std::vector<float> dots(kQ * kRows);
  k->dot_rows(qb.data(), kN, kQ, rows.data(), kLd, kRows, kN, dots.data(), kRows, buf.data());
  for (int i = 0; i < kQ; ++i)
    for (int t = 0; t < kRows; ++t) {
      double want = 0, mag = 0;
      for (int d = 0; d < kN; ++d) {
        const double p = double(bf16_round(q[i * kN + d])) * bf16_round(rows[t * kLd + d]);
        want += p;
        mag += std::abs(p);
      }
      EXPECT_NEAR(dots[i * kRows + t], want, 1e-5 * mag + 1e-6) << i << " " << t;
    }
  constexpr int kCols = 80;  // one 64-column pass and one 16-column one
  std::vector<float> y = gaussian(kQ * kCols, rng), y0 = y;
  k->axpy_rows(a.data(), kRows, kQ, rows.data(), kLd, kRows, kCols, y.data(), kCols, buf.data());
  for (int i = 0; i < kQ; ++i)
    for (int c = 0; c < kCols; ++c) {
      double want = y0[i * kCols + c], mag = std::abs(want);
      for (int t = 0; t < kRows; ++t) {
        const double p = double(bf16_round(a[i * kRows + t])) * bf16_round(rows[t * kLd + c]);
        want += p;
        mag += std::abs(p);
      }
      EXPECT_NEAR(y[i * kCols + c], want, 1e-5 * mag + 1e-6) << i << " " << c;
    }
}

constexpr int kHeads = 3, kNope = 32, kRope = 32, kLora = 64, kV = 16, kBlock = 4, kSlots = 24;

struct Mla {
  hal::MlaParams params{kHeads, kNope, kRope, kV, kLora, 0.15f, kBlock};
  std::mt19937 rng{5};
  std::vector<float> uk = gaussian(kHeads * kLora * kNope, rng, 0.3f), uv = gaussian(kHeads * kV * kLora, rng, 0.3f);
  std::vector<float> latent = gaussian(kSlots * (kLora + kRope), rng);
  // out for the sequences {q_begin, n_q, pos0}, three blocks of the slots each in `tables`.
  std::vector<float> run(hal::Precision precision, std::vector<int32_t> seqs, std::vector<int32_t> tables,
                         std::vector<float> q) {
    hal::Device* cpu = hal::Registry::global().find_device("cpu").value();
    const int64_t n_tok = static_cast<int64_t>(q.size()) / (kHeads * (kNope + kRope));
    const hal::AttnBatch batch = test::attn_batch(seqs, tables, 3);
    std::vector<float> out(static_cast<size_t>(n_tok) * kHeads * kV);
    hal::OpContext ctx = cpu->op_context();
    ctx.precision = precision;
    const Status st = cpu->ops().attention_mla(ctx, params, batch,
                                               TensorView::make(q.data(), DType::kF32, {n_tok, kHeads, kNope + kRope}),
                                               TensorView::make(uk.data(), DType::kF32, {kHeads * kLora, kNope}),
                                               TensorView::make(uv.data(), DType::kF32, {kHeads * kV, kLora}),
                                               TensorView::make(latent.data(), DType::kF32, {kSlots, kLora + kRope}),
                                               TensorView::make(out.data(), DType::kF32, {n_tok, kHeads * kV}));
    EXPECT_TRUE(st.ok()) << st.to_string();
    return out;
  }
};

TEST(MlaBf16, FastDecodeIsNearExactAndBatchInvariant) {
  Mla m;
  std::mt19937 rng(4);
  const std::vector<float> q = gaussian(2 * kHeads * (kNope + kRope), rng);
  const std::vector<int32_t> seqs = {0, 1, 10, 1, 1, 6};  // one decode query each, after 10 and 6 cached rows
  const std::vector<int32_t> tables = {5, 4, 3, 2, 0, 1};
  const std::vector<float> exact = m.run(hal::Precision::kExact, seqs, tables, q);
  const std::vector<float> fast = m.run(hal::Precision::kFast, seqs, tables, q);
  float scale = 0, diff = 0;
  for (size_t i = 0; i < exact.size(); ++i) {
    scale = std::max(scale, std::abs(exact[i]));
    diff = std::max(diff, std::abs(fast[i] - exact[i]));
  }
  ASSERT_GT(scale, 0.1f);
  if (hal::cpu::mla_bf16_kernels()) {
    EXPECT_GT(diff, 0.0f) << "the BF16 kernels did not run";
    EXPECT_LE(diff, 2e-2f * scale);  // BF16 queries, rows and weights: about 2^-9 each
  } else {
    EXPECT_EQ(diff, 0.0f) << "without BF16 kernels the fast op keeps the exact products";
  }
  const size_t per_tok = static_cast<size_t>(kHeads) * (kNope + kRope);
  const std::vector<float> second = m.run(hal::Precision::kFast, {0, 1, 6}, {2, 0, 1},
                                          std::vector<float>(q.begin() + static_cast<int64_t>(per_tok), q.end()));
  ASSERT_EQ(second.size(), fast.size() / 2);
  EXPECT_TRUE(std::equal(second.begin(), second.end(), fast.begin() + static_cast<int64_t>(fast.size() / 2)))
      << "the second sequence alone differs from the same sequence batched";
}

}  // namespace
}  // namespace cai::mla_bf16_test
