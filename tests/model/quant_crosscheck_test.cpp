// Cross-checks the Q8_0 decoder and the CPU GEMM on real data: TinyStories-656K Q8_0 GGUF vs its F16 GGUF.
#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <vector>

#include "core/quant.h"
#include "hal/cpu/kernels/kernels.h"
#include "model/loaders/gguf.h"
#include "test_paths.h"

namespace cai {
namespace {

std::vector<float> decode(const GgufTensorInfo& t) {
  int64_t n = 1;
  for (int64_t d : t.ne) n *= d;
  std::vector<float> v(static_cast<size_t>(n));
  dequantize_row(t.dtype, t.data, v.data(), n);
  return v;
}

TEST(QuantCrossCheck, TinyStoriesQ8_0MatchesF16) {
  auto q8 = GgufFile::open(test::data_path("models/TinyStories-656K-Q8_0.gguf"));
  auto f16 = GgufFile::open(test::data_path("models/TinyStories-656K.f16.gguf"));
  ASSERT_TRUE(q8.ok()) << q8.status().to_string();
  ASSERT_TRUE(f16.ok()) << f16.status().to_string();
  int n_checked = 0;
  double err2 = 0, sig2 = 0;
  for (const GgufTensorInfo& t : (*q8)->tensors()) {
    if (t.dtype != DType::kQ8_0) continue;
    const GgufTensorInfo* ref = (*f16)->find(t.name);
    ASSERT_NE(ref, nullptr) << t.name;
    ASSERT_EQ(ref->ne, t.ne) << t.name;
    std::vector<float> a = decode(t), b = decode(*ref);
    // Each 32-block: |q8 − f16| stays within half a quantization step (amax/254) plus f16 rounding slack.
    for (size_t blk = 0; blk < a.size() / 32; ++blk) {
      float amax = 0;
      for (int k = 0; k < 32; ++k) amax = std::max(amax, std::fabs(b[32 * blk + k]));
      for (int k = 0; k < 32; ++k) {
        size_t i = 32 * blk + k;
        ASSERT_LE(std::fabs(a[i] - b[i]), amax / 127 * 0.6f + 1e-6f) << t.name << " element " << i;
        err2 += (a[i] - b[i]) * (a[i] - b[i]);
        sig2 += b[i] * b[i];
      }
    }
    ++n_checked;
  }
  EXPECT_GT(n_checked, 10);
  EXPECT_LT(std::sqrt(err2 / sig2), 0.01);  // 0.4 % measured: docs/design/formats.md#how-the-facts-are-checked
}

TEST(QuantCrossCheck, GemmOnRealWeightsAgreesAcrossDtypes) {
  auto q8 = GgufFile::open(test::data_path("models/TinyStories-656K-Q8_0.gguf"));
  auto f16 = GgufFile::open(test::data_path("models/TinyStories-656K.f16.gguf"));
  ASSERT_TRUE(q8.ok() && f16.ok());
  const GgufTensorInfo* wq = nullptr;
  for (const GgufTensorInfo& t : (*q8)->tensors())
    if (t.dtype == DType::kQ8_0 && t.ne.size() == 2) wq = &t;
  ASSERT_NE(wq, nullptr);
  const GgufTensorInfo* wf = (*f16)->find(wq->name);
  ASSERT_NE(wf, nullptr);
  ASSERT_EQ(wf->dtype, DType::kF16) << wq->name;
  TensorView vq = wq->view(), vf = wf->view();
  int64_t out = vq.dim(0), in = vq.dim(1), n = 5;
  std::mt19937 rng(3);
  std::normal_distribution<float> dist;
  std::vector<float> x(static_cast<size_t>(n * in)), yq(static_cast<size_t>(n * out)), yf(yq.size());
  for (auto& v : x) v = dist(rng);
  TensorView xv = TensorView::make(x.data(), DType::kF32, {n, in});
  ASSERT_TRUE(hal::cpu::dense_gemm({}, vq, xv, nullptr, TensorView::make(yq.data(), DType::kF32, {n, out})).ok());
  ASSERT_TRUE(hal::cpu::dense_gemm({}, vf, xv, nullptr, TensorView::make(yf.data(), DType::kF32, {n, out})).ok());
  double err2 = 0, sig2 = 0;
  for (size_t i = 0; i < yq.size(); ++i) {
    err2 += (yq[i] - yf[i]) * (yq[i] - yf[i]);
    sig2 += yf[i] * yf[i];
  }
  EXPECT_LT(std::sqrt(err2 / sig2), 0.01) << wq->name;
}

}  // namespace
}  // namespace cai
