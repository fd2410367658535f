// simt tests of the CUDA-dialect weight decoders, dense_gemm (every dtype, bias, batch invariance) and embed, at warp
// 32 and 64, against the scalar reference ops and dequantize_weight_row.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <iterator>
#include <random>
#include <vector>

#include "core/weight_row.h"
#include "cuda/simt_test_util.h"
#include "hal/cuda/kernels/dequant.cuh"
#include "hal/cuda/kernels/gemm_warp.cuh"
#include "ops/ref/ref_ops.h"

namespace cai::gpu::test {
namespace {

// Every weight dtype: those of plugin ABI 2.0, then those added in 2.1.
const std::vector<DType> kAllWeightTypes = [] {
  std::vector<DType> v(std::begin(kBaseWeightTypes), std::end(kBaseWeightTypes));
  for (DType t : kAddedWeightTypes) v.push_back(t);
  return v;
}();

bool is_block_type(DType t) { return dtype_info(t).block_elems > 1; }

// Columns for a dtype: whole blocks for block types, a ragged width (decoder tail path) otherwise.
int64_t test_cols(DType t) { return dtype_info(t).block_elems == 256 ? 512 : (is_block_type(t) ? 160 : 203); }

uint32_t bits(float f) {
  uint32_t u;
  std::memcpy(&u, &f, 4);
  return u;
}

// out[r * cols + c] = weight_at(expert e of w, r, c) for every element.
__global__ void weight_at_kernel(WeightView w, float* out) {
  const int64_t r = blockIdx.x;
  for (int64_t c = threadIdx.x; c < w.cols; c += blockDim.x) out[r * w.cols + c] = weight_at(w, r, c);
}

// The same through decode_chunk, for the whole 8-column chunks of each row.
__global__ void decode_chunk_kernel(WeightView w, float* out) {
  const int64_t r = blockIdx.x;
  for (int64_t c = threadIdx.x; c < w.cols / kChunk; c += blockDim.x)
    decode_chunk(w, r, c * kChunk, out + r * w.cols + c * kChunk);
}

TEST(CudaWeightDecode, WeightAtAndDecodeChunkAreBitExactPerDtypeAndExpert) {
  std::mt19937 rng(7);
  for (DType t : kAllWeightTypes) {
    SCOPED_TRACE(dtype_name(t));
    const int64_t n_exp = 2, rows = 130, cols = test_cols(t);
    HostWeights hw = make_weights(t, {n_exp, rows, cols}, t == DType::kF8_E4M3, rng);
    for_each_warp([&](SimtDevice& dev) {
      const CaiTensor w = dev.upload_tensor(hw.view());
      for (const bool chunked : {false, true}) {
        SCOPED_TRACE(chunked ? "decode_chunk" : "weight_at");
        const int64_t checked_cols = chunked ? cols / kChunk * kChunk : cols;
        for (int64_t e = 0; e < n_exp; ++e) {
          const CaiTensor out = dev.zeros_f32({rows, cols});
          GPU_LAUNCH(dim3(static_cast<unsigned>(rows)), dim3(64), 0, dev.ctx().stream,
                     chunked ? decode_chunk_kernel : weight_at_kernel)
          (weight_view(w, e), static_cast<float*>(out.data));
          const auto got = dev.download<float>(out.data, static_cast<size_t>(rows * cols));
          const TensorView expert = hw.view().slice(e);
          std::vector<float> want(static_cast<size_t>(cols));
          for (int64_t r = 0; r < rows; ++r) {
            dequantize_weight_row(expert, r, want.data());
            for (int64_t c = 0; c < checked_cols; ++c)
              ASSERT_EQ(bits(got[static_cast<size_t>(r * cols + c)]), bits(want[static_cast<size_t>(c)]))
                  << "expert " << e << " row " << r << " col " << c;
          }
        }
      }
    });
  }
}

// y = x · w^T (+ bias) on simt vs the reference; tol = 1e-5 · Σ|w·x| per element (+ a floor), as tests/ops do.
void check_gemm(DType t, int64_t out_rows, int64_t in, int64_t n, bool with_bias, bool scaled, uint32_t seed) {
  SCOPED_TRACE(std::string(dtype_name(t)) + " out " + std::to_string(out_rows) + " in " + std::to_string(in) + " n " +
               std::to_string(n) + (with_bias ? " bias" : ""));
  std::mt19937 rng(seed);
  HostWeights hw = make_weights(t, {out_rows, in}, scaled, rng);
  auto x = gaussian(static_cast<size_t>(n * in), rng);
  auto bias = gaussian(static_cast<size_t>(out_rows), rng);
  std::vector<float> want(static_cast<size_t>(n * out_rows));
  TensorView bias_view = host_f32(bias, {out_rows});
  const Status st = ops::ref::op_table().dense_gemm({}, hw.view(), host_f32(x, {n, in}),
                                                    with_bias ? &bias_view : nullptr, host_f32(want, {n, out_rows}));
  ASSERT_TRUE(st.ok()) << st.to_string();
  std::vector<double> tol(want.size());
  std::vector<float> wr(static_cast<size_t>(in));
  for (int64_t o = 0; o < out_rows; ++o) {
    dequantize_weight_row(hw.view(), o, wr.data());
    for (int64_t i = 0; i < n; ++i) {
      double a = 0;
      for (int64_t c = 0; c < in; ++c)
        a += std::fabs(static_cast<double>(wr[static_cast<size_t>(c)]) * x[static_cast<size_t>(i * in + c)]);
      tol[static_cast<size_t>(i * out_rows + o)] = 1e-5 * a + 1e-6;
    }
  }
  for_each_warp([&](SimtDevice& dev) {
    const CaiTensor w = dev.upload_tensor(hw.view());
    const CaiTensor xd = SimtDevice::tensor(dev.upload(x), CAI_DTYPE_F32, {n, in});
    const CaiTensor bd = SimtDevice::tensor(dev.upload(bias), CAI_DTYPE_F32, {out_rows});
    const CaiTensor y = dev.zeros_f32({n, out_rows});
    CaiError err{};
    ASSERT_EQ(dense_gemm(dev.ctx(), w, xd, with_bias ? &bd : nullptr, y, &err), CAI_OK) << err.message;
    const auto got = dev.download<float>(y.data, want.size());
    int bad = 0;
    for (size_t i = 0; i < got.size(); ++i)
      if (!(std::fabs(got[i] - want[i]) <= tol[i]) && ++bad <= 3)
        ADD_FAILURE() << "element " << i << ": got " << got[i] << " want " << want[i] << " tol " << tol[i];
    EXPECT_EQ(bad, 0);
  });
}

TEST(CudaDenseGemm, EveryDtypeGemvAndTiledMatchReference) {
  uint32_t seed = 1;
  for (DType t : kAllWeightTypes)
    for (int64_t n : {1, 3, 8, 21}) check_gemm(t, 70, test_cols(t), n, n % 2 == 1, false, seed++);
}

// Rows long enough that the GEMV splits each weight row over several warps (partial sums combined through shared
// memory), with a ragged F16 width whose tail columns are shared out too.
TEST(CudaDenseGemm, RowsSplitOverSeveralWarpsMatchReference) {
  const std::pair<DType, int64_t> shapes[] = {{DType::kQ8_0, 4096}, {DType::kQ4_K, 2048}, {DType::kF16, 1543}};
  uint32_t seed = 60;
  for (const auto& [t, in] : shapes) {
    ASSERT_GT(row_group_warps(in, 32, 4), 1) << dtype_name(t);
    for (int64_t n : {1, 5}) check_gemm(t, 9, in, n, n == 5, false, seed++);
  }
}

TEST(CudaDenseGemm, Fp8BlockScalesOnRaggedShapes) {
  for (int64_t n : {2, 19}) check_gemm(DType::kF8_E4M3, 150, 200, n, true, true, 40 + static_cast<uint32_t>(n));
}

// In batch-invariant mode each row of a batch of 1, 3, 16 or 37 is bit-identical to the row computed alone. The
// property is the kernels' reduction order, not the decoders' (pure functions of the bytes), so the ABI 2.0 types
// suffice; the added types' decoders are checked above.
void check_batch_invariant(DType t, int64_t in, std::mt19937& rng) {
  SCOPED_TRACE(std::string(dtype_name(t)) + " in " + std::to_string(in));
  const int64_t out_rows = 24, max_n = 37;
  HostWeights hw = make_weights(t, {out_rows, in}, t == DType::kF8_E4M3, rng);
  const auto x = gaussian(static_cast<size_t>(max_n * in), rng);
  for_each_warp([&](SimtDevice& dev) {
    dev.ctx().batch_invariant = true;
    const CaiTensor w = dev.upload_tensor(hw.view());
    float* xd = dev.upload(x);
    const CaiTensor y = dev.zeros_f32({max_n, out_rows});
    CaiError err{};
    for (int64_t r = 0; r < max_n; ++r) {
      const CaiTensor xr = SimtDevice::tensor(xd + r * in, CAI_DTYPE_F32, {1, in});
      float* y_row = static_cast<float*>(y.data) + r * out_rows;
      const CaiTensor yr = SimtDevice::tensor(y_row, CAI_DTYPE_F32, {1, out_rows});
      ASSERT_EQ(dense_gemm(dev.ctx(), w, xr, nullptr, yr, &err), CAI_OK) << err.message;
    }
    const auto solo = dev.download<float>(y.data, static_cast<size_t>(max_n * out_rows));
    for (int64_t n : {1, 3, 16, 37}) {
      const int64_t first = max_n - n;  // the last n rows, so row positions in the batch differ from the solo run
      const CaiTensor xb = SimtDevice::tensor(xd + first * in, CAI_DTYPE_F32, {n, in});
      const CaiTensor yb = dev.zeros_f32({n, out_rows});
      ASSERT_EQ(dense_gemm(dev.ctx(), w, xb, nullptr, yb, &err), CAI_OK) << err.message;
      const auto got = dev.download<float>(yb.data, static_cast<size_t>(n * out_rows));
      for (size_t i = 0; i < got.size(); ++i)
        ASSERT_EQ(bits(got[i]), bits(solo[static_cast<size_t>(first * out_rows) + i])) << "batch " << n << " at " << i;
    }
  });
}

TEST(CudaDenseGemm, BatchInvariantRowsMatchSoloRows) {
  std::mt19937 rng(99);
  for (DType t : kBaseWeightTypes) check_batch_invariant(t, test_cols(t), rng);
  check_batch_invariant(DType::kQ8_0, 4096, rng);  // rows split over several warps
}

TEST(CudaDenseGemm, RejectsBadArguments) {
  SimtDevice dev;
  float* buf = static_cast<float*>(dev.alloc(4096 * sizeof(float)));
  const CaiTensor w = SimtDevice::tensor(buf, CAI_DTYPE_F32, {8, 16});
  const CaiTensor x = SimtDevice::tensor(buf + 1024, CAI_DTYPE_F32, {2, 16});
  const CaiTensor y = SimtDevice::tensor(buf + 2048, CAI_DTYPE_F32, {2, 8});
  CaiError err{};
  EXPECT_EQ(dense_gemm(dev.ctx(), w, x, nullptr, SimtDevice::tensor(buf + 2048, CAI_DTYPE_F32, {2, 9}), &err),
            CAI_ERR_INVALID_ARGUMENT);
  EXPECT_NE(std::string(err.message).find("dense_gemm"), std::string::npos) << err.message;
  EXPECT_EQ(dense_gemm(dev.ctx(), SimtDevice::tensor(buf, CAI_DTYPE_I32, {8, 16}), x, nullptr, y, &err),
            CAI_ERR_UNSUPPORTED);
  EXPECT_EQ(dense_gemm(dev.ctx(), SimtDevice::tensor(buf, CAI_DTYPE_Q8_0, {8, 16}), x, nullptr, y, &err),
            CAI_ERR_INVALID_ARGUMENT);  // 16 columns is not a whole Q8_0 block
  const CaiTensor bad_bias = SimtDevice::tensor(buf + 3072, CAI_DTYPE_F32, {7});
  EXPECT_EQ(dense_gemm(dev.ctx(), w, x, &bad_bias, y, &err), CAI_ERR_INVALID_ARGUMENT);
  EXPECT_EQ(dense_gemm(dev.ctx(), w, SimtDevice::tensor(buf + 1024, CAI_DTYPE_F16, {2, 16}), nullptr, y, &err),
            CAI_ERR_UNSUPPORTED);
}

// Every valid row decodes exactly like the reference embed; ids outside the vocabulary give zero rows.
TEST(CudaEmbed, EveryDtypeMatchesReferenceAndZeroesBadIds) {
  std::mt19937 rng(5);
  for (DType t : kAllWeightTypes) {
    SCOPED_TRACE(dtype_name(t));
    const int64_t vocab = 11, dim = test_cols(t);
    HostWeights hw = make_weights(t, {vocab, dim}, false, rng);
    std::vector<int32_t> ids = {3, 0, 10, -1, 7, 11, 3};
    std::vector<int32_t> valid_ids = {3, 0, 10, 7, 3};
    std::vector<float> want(valid_ids.size() * static_cast<size_t>(dim));
    const Status st = ops::ref::op_table().embed(
        {}, hw.view(), TensorView::make(valid_ids.data(), DType::kI32, {static_cast<int64_t>(valid_ids.size())}),
        host_f32(want, {static_cast<int64_t>(valid_ids.size()), dim}));
    ASSERT_TRUE(st.ok()) << st.to_string();
    for_each_warp([&](SimtDevice& dev) {
      const CaiTensor table = dev.upload_tensor(hw.view());
      const auto n = static_cast<int64_t>(ids.size());
      const CaiTensor id_t = SimtDevice::tensor(dev.upload(ids), CAI_DTYPE_I32, {n});
      const CaiTensor out = SimtDevice::tensor(dev.upload(std::vector<float>(static_cast<size_t>(n * dim), 1.0f)),
                                               CAI_DTYPE_F32, {n, dim});
      CaiError err{};
      ASSERT_EQ(embed(dev.ctx(), table, id_t, out, &err), CAI_OK) << err.message;
      const auto got = dev.download<float>(out.data, static_cast<size_t>(n * dim));
      size_t v = 0;
      for (size_t i = 0; i < ids.size(); ++i) {
        const bool ok = ids[i] >= 0 && ids[i] < vocab;
        for (int64_t c = 0; c < dim; ++c) {
          const float g = got[i * static_cast<size_t>(dim) + static_cast<size_t>(c)];
          const float w = ok ? want[v * static_cast<size_t>(dim) + static_cast<size_t>(c)] : 0.0f;
          ASSERT_EQ(bits(g), bits(w)) << "token " << i << " col " << c;
        }
        v += ok ? 1 : 0;
      }
    });
  }
}

}  // namespace
}  // namespace cai::gpu::test
