// simt tests of the CUDA-dialect sparse_moe: every expert dtype vs the reference, bad expert ids, per-token batch
// invariance, long expert segments and argument errors, at warp 32 and 64.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <random>
#include <vector>

#include "cuda/simt_test_util.h"
#include "ops/ref/ref_ops.h"

namespace cai::gpu::test {
namespace {

struct MoeCase {
  DType dtype;
  int64_t n_exp, hidden, ffn, n, top_k;
  std::vector<int32_t> ids;  // [n, top_k]
};

struct HostExperts {
  HostWeights gate, up, down;
  hal::ExpertWeights views() { return {gate.view(), up.view(), down.view()}; }
};

HostExperts make_experts(const MoeCase& c, std::mt19937& rng) {
  const bool fp8 = c.dtype == DType::kF8_E4M3;
  return {make_weights(c.dtype, {c.n_exp, c.ffn, c.hidden}, fp8, rng),
          make_weights(c.dtype, {c.n_exp, c.ffn, c.hidden}, fp8, rng),
          make_weights(c.dtype, {c.n_exp, c.hidden, c.ffn}, fp8, rng)};
}

// Runs sparse_moe on the device for rows [first, first + n) of x / ids / weights and returns out.
std::vector<float> run_moe(SimtDevice& dev, const CaiExpertWeights& w, const MoeCase& c, const std::vector<float>& x,
                           const std::vector<float>& wts, int64_t first, int64_t n) {
  const std::vector<float> xs(x.begin() + first * c.hidden, x.begin() + (first + n) * c.hidden);
  const std::vector<int32_t> ids(c.ids.begin() + first * c.top_k, c.ids.begin() + (first + n) * c.top_k);
  const std::vector<float> ws(wts.begin() + first * c.top_k, wts.begin() + (first + n) * c.top_k);
  const CaiTensor out = dev.zeros_f32({n, c.hidden});
  CaiError err{};
  const int rc = sparse_moe(dev.ctx(), w, SimtDevice::tensor(dev.upload(xs), CAI_DTYPE_F32, {n, c.hidden}),
                            SimtDevice::tensor(dev.upload(ids), CAI_DTYPE_I32, {n, c.top_k}),
                            SimtDevice::tensor(dev.upload(ws), CAI_DTYPE_F32, {n, c.top_k}), out, &err);
  EXPECT_EQ(rc, CAI_OK) << err.message;
  return dev.download<float>(out.data, static_cast<size_t>(n * c.hidden));
}

// The reference output; slots with an id outside [0, E) are given weight 0 (and a valid id), as the kernel skips them.
std::vector<float> reference(HostExperts& he, const MoeCase& c, std::vector<float> x, std::vector<float> wts) {
  std::vector<int32_t> ids = c.ids;
  for (size_t i = 0; i < ids.size(); ++i)
    if (ids[i] < 0 || ids[i] >= c.n_exp) {
      ids[i] = 0;
      wts[i] = 0.0f;
    }
  std::vector<float> out(static_cast<size_t>(c.n * c.hidden));
  const Status st = ops::ref::op_table().sparse_moe({}, he.views(), host_f32(x, {c.n, c.hidden}),
                                                    TensorView::make(ids.data(), DType::kI32, {c.n, c.top_k}),
                                                    host_f32(wts, {c.n, c.top_k}), host_f32(out, {c.n, c.hidden}));
  EXPECT_TRUE(st.ok()) << st.to_string();
  return out;
}

// |got - want| <= 2e-5 · (1 + max |want|): float GEMVs against a double reference.
void expect_within_scale(const std::vector<float>& got, const std::vector<float>& want) {
  ASSERT_EQ(got.size(), want.size());
  float scale = 0.0f;
  for (float v : want) scale = std::max(scale, std::fabs(v));
  const float tol = 2e-5f * (1.0f + scale);
  int bad = 0;
  for (size_t i = 0; i < got.size(); ++i)
    if (!(std::fabs(got[i] - want[i]) <= tol) && ++bad <= 3)
      ADD_FAILURE() << "element " << i << ": got " << got[i] << " want " << want[i] << " tol " << tol;
  EXPECT_EQ(bad, 0);
}

// Checks the whole batch against the reference and a few tokens run alone against their rows of the batch
// (bit-exact: grouping and batch-mates must not change a token's result).
void check_moe(const MoeCase& c, uint32_t seed, bool solo_rows) {
  SCOPED_TRACE(std::string(dtype_name(c.dtype)) + " E " + std::to_string(c.n_exp) + " n " + std::to_string(c.n));
  std::mt19937 rng(seed);
  HostExperts he = make_experts(c, rng);
  const auto x = gaussian(static_cast<size_t>(c.n * c.hidden), rng);
  const auto wts = gaussian(static_cast<size_t>(c.n * c.top_k), rng, 0.5f);
  const auto want = reference(he, c, x, wts);
  for_each_warp([&](SimtDevice& dev) {
    const CaiExpertWeights w{dev.upload_tensor(he.gate.view()), dev.upload_tensor(he.up.view()),
                             dev.upload_tensor(he.down.view())};
    const auto got = run_moe(dev, w, c, x, wts, 0, c.n);
    expect_within_scale(got, want);
    if (!solo_rows) return;
    for (int64_t t : {int64_t{0}, c.n / 2, c.n - 1}) {
      const auto one = run_moe(dev, w, c, x, wts, t, 1);
      ASSERT_EQ(std::memcmp(one.data(), got.data() + t * c.hidden, one.size() * sizeof(float)), 0) << "token " << t;
    }
  });
}

int64_t cols_for(DType t) { return dtype_info(t).block_elems == 256 ? 256 : 64; }

TEST(CudaSparseMoe, EveryDtypeMatchesReferenceAndSoloRows) {
  const std::vector<int32_t> ids = {0, 3, 3, 1, 4, 0, 2, 3, 1, 4, 0, 1, 3, 2};
  uint32_t seed = 11;
  for (DType t : kBaseWeightTypes) {
    const int64_t width = cols_for(t);
    check_moe({t, 5, width, width == 256 ? 256 : 96, 7, 2, ids}, seed++, true);
  }
}

// The types added in ABI 2.1 take the same grouped-GEMV path; one small case each checks their decoders in it (the
// solo-row invariance above does not depend on the dtype). Only expert 1 is routed to, so its matrices are found past
// expert 0's (rows of odd-sized blocks included) while simt runs one expert's GEMVs.
TEST(CudaSparseMoe, AddedDtypesMatchReference) {
  const std::vector<int32_t> ids = {1, 1, 1};
  uint32_t seed = 51;
  for (DType t : kAddedWeightTypes) {
    const int64_t width = cols_for(t);
    check_moe({t, 2, width, width, 3, 1, ids}, seed++, false);
  }
}

// Widths at which each expert row is split over several warps (gate / up over 1,536 columns, down over 1,280).
TEST(CudaSparseMoe, RowsSplitOverSeveralWarps) {
  const std::vector<int32_t> ids = {2, 0, 1, 2, 0, 2};
  check_moe({DType::kQ8_0, 3, 1536, 1280, 3, 2, ids}, 41, true);
}

TEST(CudaSparseMoe, IdsOutsideTheExpertsAreSkipped) {
  const std::vector<int32_t> ids = {0, -1, 2, 3, 99, 1, 2, 0, -7, 3, 1, 1};
  check_moe({DType::kQ8_0, 4, 64, 32, 4, 3, ids}, 21, true);
}

// One expert with more routed tokens than one pass of the grouped GEMV grid covers.
TEST(CudaSparseMoe, LongExpertSegments) {
  MoeCase c{DType::kF16, 2, 64, 32, 200, 1, std::vector<int32_t>(200, 0)};
  for (size_t i = 0; i < c.ids.size(); i += 10) c.ids[i] = 1;
  check_moe(c, 31, false);
}

TEST(CudaSparseMoe, RejectsBadArguments) {
  SimtDevice dev;
  auto* buf = static_cast<float*>(dev.alloc(1 << 16));
  const CaiTensor gate = SimtDevice::tensor(buf, CAI_DTYPE_F32, {2, 8, 16});
  const CaiTensor down = SimtDevice::tensor(buf, CAI_DTYPE_F32, {2, 16, 8});
  const CaiTensor x = SimtDevice::tensor(buf + 4096, CAI_DTYPE_F32, {3, 16});
  const CaiTensor ids = SimtDevice::tensor(buf + 8192, CAI_DTYPE_I32, {3, 2});
  const CaiTensor wts = SimtDevice::tensor(buf + 8192 + 64, CAI_DTYPE_F32, {3, 2});
  const CaiTensor out = SimtDevice::tensor(buf + 12288, CAI_DTYPE_F32, {3, 16});
  CaiError err{};
  EXPECT_EQ(sparse_moe(dev.ctx(), {gate, gate, gate}, x, ids, wts, out, &err), CAI_ERR_INVALID_ARGUMENT);
  EXPECT_NE(std::string(err.message).find("sparse_moe"), std::string::npos) << err.message;
  EXPECT_EQ(sparse_moe(dev.ctx(), {gate, gate, down}, x, wts, wts, out, &err), CAI_ERR_INVALID_ARGUMENT);
  EXPECT_EQ(sparse_moe(dev.ctx(), {gate, gate, down}, SimtDevice::tensor(buf + 4096, CAI_DTYPE_F32, {3, 8}), ids, wts,
                       out, &err),
            CAI_ERR_INVALID_ARGUMENT);
  const CaiTensor gate_2d = SimtDevice::tensor(buf, CAI_DTYPE_F32, {16, 16});
  EXPECT_EQ(sparse_moe(dev.ctx(), {gate_2d, gate, down}, x, ids, wts, out, &err), CAI_ERR_INVALID_ARGUMENT);
  EXPECT_EQ(sparse_moe(dev.ctx(), {gate, gate, down}, x, ids, wts, out, &err), CAI_OK) << err.message;
}

}  // namespace
}  // namespace cai::gpu::test
