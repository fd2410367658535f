// simt tests (warp 32/64) of rms_norm, add, swiglu, softmax, copy_cols, kv_write (F32, F16 and BF16 caches) and rope
// vs reference and CPU; the f32 ↔ f16 / bf16 / fp8 conversions of convert.cuh vs core/dtype.cpp.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <random>
#include <vector>

#include "cuda/expect_close.h"
#include "cuda/simt_test_util.h"
#include "hal/cuda/kernels/convert.cuh"
#include "hal/cpu/kernels/kernels.h"
#include "ops/ref/ref_ops.h"

namespace cai::gpu::test {
namespace {

const hal::OpTable& ref() { return ops::ref::op_table(); }

void expect_ok(const Status& st) { ASSERT_TRUE(st.ok()) << st.to_string(); }
void expect_ok(int rc, const CaiError& err) { ASSERT_EQ(rc, CAI_OK) << err.message; }

TEST(CudaElementwise, RmsNormMatchesReference) {
  std::mt19937 rng(1);
  const int64_t n = 5, dim = 300;
  auto x = gaussian(static_cast<size_t>(n * dim), rng), w = gaussian(static_cast<size_t>(dim), rng);
  std::vector<float> want(x.size());
  expect_ok(ref().rms_norm({}, host_f32(x, {n, dim}), host_f32(w, {dim}), 1e-6f, host_f32(want, {n, dim})));
  for_each_warp([&](SimtDevice& dev) {
    CaiError err{};
    const CaiTensor out = dev.zeros_f32({n, dim});
    expect_ok(rms_norm(dev.ctx(), dev.upload_tensor(host_f32(x, {n, dim})), dev.upload_tensor(host_f32(w, {dim})),
                       1e-6f, out, &err),
              err);
    expect_close(dev.download<float>(out.data, x.size()), want, 1e-5f, 1e-6f, "rms_norm");
  });
}

TEST(CudaElementwise, AddSwigluSoftmaxMatchReference) {
  std::mt19937 rng(2);
  const int64_t rows = 3, cols = 1000;
  auto a = gaussian(static_cast<size_t>(rows * cols), rng, 3.0f), b = gaussian(a.size(), rng, 3.0f);
  std::vector<float> sum(a.size()), act(a.size()), soft = a;
  expect_ok(ref().add({}, host_f32(a, {rows, cols}), host_f32(b, {rows, cols}), host_f32(sum, {rows, cols})));
  expect_ok(ref().swiglu({}, host_f32(a, {rows, cols}), host_f32(b, {rows, cols}), host_f32(act, {rows, cols})));
  expect_ok(ref().softmax({}, host_f32(soft, {rows, cols})));
  for_each_warp([&](SimtDevice& dev) {
    CaiError err{};
    const CaiTensor da = dev.upload_tensor(host_f32(a, {rows, cols}));
    const CaiTensor db = dev.upload_tensor(host_f32(b, {rows, cols}));
    const CaiTensor out_sum = dev.zeros_f32({rows, cols}), out_act = dev.zeros_f32({rows, cols});
    expect_ok(add(dev.ctx(), da, db, out_sum, &err), err);
    expect_ok(swiglu(dev.ctx(), da, db, out_act, &err), err);
    expect_ok(softmax(dev.ctx(), da, &err), err);  // in place
    expect_close(dev.download<float>(out_sum.data, a.size()), sum, 0.0f, 0.0f, "add");
    expect_close(dev.download<float>(out_act.data, a.size()), act, 1e-6f, 1e-6f, "swiglu");
    expect_close(dev.download<float>(da.data, a.size()), soft, 1e-5f, 1e-9f, "softmax");
  });
}

TEST(CudaElementwise, CopyColsAndKvWriteMatchReference) {
  std::mt19937 rng(3);
  const int64_t rows = 7, src_cols = 90, dst_cols = 50, width = 70, n_slots = 20;
  auto src = gaussian(static_cast<size_t>(rows * src_cols), rng);
  auto dst = gaussian(static_cast<size_t>(rows * dst_cols), rng);
  auto kv = gaussian(static_cast<size_t>(rows * width), rng);
  auto cache = gaussian(static_cast<size_t>(n_slots * width), rng);
  std::vector<int32_t> slots = {3, 19, 0, 7, 12, 5, 8};
  std::vector<float> want_dst = dst, want_cache = cache;
  expect_ok(ref().copy_cols({}, host_f32(src, {rows, src_cols}), 17, host_f32(want_dst, {rows, dst_cols}), 9, 33));
  expect_ok(ref().kv_write({}, host_f32(kv, {rows, width}), TensorView::make(slots.data(), DType::kI32, {rows}),
                           host_f32(want_cache, {n_slots, width})));
  for_each_warp([&](SimtDevice& dev) {
    CaiError err{};
    const CaiTensor d_dst = dev.upload_tensor(host_f32(dst, {rows, dst_cols}));
    const CaiTensor d_cache = dev.upload_tensor(host_f32(cache, {n_slots, width}));
    expect_ok(copy_cols(dev.ctx(), dev.upload_tensor(host_f32(src, {rows, src_cols})), 17, d_dst, 9, 33, &err), err);
    const CaiTensor d_slots = SimtDevice::tensor(dev.upload(slots), CAI_DTYPE_I32, {rows});
    expect_ok(kv_write(dev.ctx(), dev.upload_tensor(host_f32(kv, {rows, width})), d_slots, d_cache, &err), err);
    expect_close(dev.download<float>(d_dst.data, dst.size()), want_dst, 0.0f, 0.0f, "copy_cols");
    expect_close(dev.download<float>(d_cache.data, cache.size()), want_cache, 0.0f, 0.0f, "kv_write");
    EXPECT_EQ(copy_cols(dev.ctx(), d_dst, 0, d_dst, 10, 20, &err), CAI_ERR_UNSUPPORTED);  // overlapping in place
    EXPECT_EQ(kv_write(dev.ctx(), d_dst, d_slots, d_cache, &err), CAI_ERR_INVALID_ARGUMENT) << err.message;
  });
}

// kv_write rounds F32 rows into F16 / BF16 caches bit for bit like the reference (f16 subnormals, overflow, NaN
// included); untouched slots keep their bytes.
TEST(CudaElementwise, KvWriteRoundsIntoHalfCaches) {
  std::mt19937 rng(6);
  const int64_t rows = 5, width = 70, n_slots = 12;
  auto kv = gaussian(static_cast<size_t>(rows * width), rng, 3.0f);
  kv[3] = 3e-6f;     // an f16 subnormal
  kv[4] = 70000.0f;  // past f16's range: inf
  kv[5] = NAN;
  kv[6] = 1.00390625f;  // 1 + 2^-8: a bf16 tie, rounds to even
  std::vector<int32_t> slots = {4, 0, 11, 7, 2};
  for (DType dt : {DType::kF16, DType::kBF16}) {
    SCOPED_TRACE(std::string(dtype_name(dt)));
    HostWeights cache = make_weights(dt, {n_slots, width}, false, rng);
    std::vector<uint8_t> want = cache.bytes;
    TensorView want_view = cache.view();
    want_view.data = want.data();
    expect_ok(ref().kv_write({}, host_f32(kv, {rows, width}), TensorView::make(slots.data(), DType::kI32, {rows}),
                             want_view));
    for_each_warp([&](SimtDevice& dev) {
      CaiError err{};
      const CaiTensor d_cache = dev.upload_tensor(cache.view());
      const CaiTensor d_slots = SimtDevice::tensor(dev.upload(slots), CAI_DTYPE_I32, {rows});
      expect_ok(kv_write(dev.ctx(), dev.upload_tensor(host_f32(kv, {rows, width})), d_slots, d_cache, &err), err);
      EXPECT_EQ(dev.download<uint8_t>(d_cache.data, want.size()), want);
    });
  }
}

// convert.cuh's f32 → f16 / bf16 equal core/dtype.cpp's on edge values, the whole f16-subnormal range (strided) and
// random bit patterns.
TEST(CudaConvert, F32ToHalfMatchesCore) {
  std::vector<uint32_t> bits = {0u,          0x80000000u, 0x7F800000u, 0xFF800000u, 0x7FC00001u, 0xFF812345u,
                                0x477FEFFFu, 0x477FF000u, 0x38800000u, 0x387FFFFFu, 0x33000000u, 0x33000001u,
                                0x32FFFFFFu, 0x00000001u, 0x3F808000u, 0x3F818000u, 0x7F7FFFFFu, 0x80000001u};
  for (uint32_t u = 0x32000000u; u < 0x38900000u; u += 0x65u) bits.push_back(u);
  std::mt19937 rng(7);
  for (int i = 0; i < (1 << 20); ++i) bits.push_back(static_cast<uint32_t>(rng()));
  for (uint32_t u : bits) {
    float f;
    std::memcpy(&f, &u, 4);
    ASSERT_EQ(cai::gpu::f32_to_f16(f), cai::f32_to_f16(f)) << std::hex << u;
    ASSERT_EQ(cai::gpu::f32_to_bf16(f), cai::f32_to_bf16(f)) << std::hex << u;
  }
}

// convert.cuh's branch-free f16 / fp8 e4m3 → f32 equal core/dtype.cpp's for every code, NaN payloads included.
TEST(CudaConvert, HalfAndFp8ToF32MatchCoreOnEveryCode) {
  const auto bits = [](float f) {
    uint32_t u;
    std::memcpy(&u, &f, 4);
    return u;
  };
  for (uint32_t h = 0; h < 0x10000u; ++h)
    ASSERT_EQ(bits(cai::gpu::f16_to_f32(static_cast<uint16_t>(h))), bits(cai::f16_to_f32(static_cast<uint16_t>(h))))
        << std::hex << h;
  for (uint32_t c = 0; c < 0x100u; ++c)
    ASSERT_EQ(bits(cai::gpu::fp8_e4m3_to_f32(static_cast<uint8_t>(c))),
              bits(cai::fp8_e4m3_to_f32(static_cast<uint8_t>(c))))
        << std::hex << c;
}

// RoPE on simt vs the CPU kernel (same float angle) within 1e-5 relative, and vs the double reference loosely
// (angles of large positions differ by float rounding there).
void check_rope(int32_t style, int n_rot, int rot_offset, float mscale) {
  SCOPED_TRACE("style " + std::to_string(style) + " n_rot " + std::to_string(n_rot) + " offset " +
               std::to_string(rot_offset));
  std::mt19937 rng(4);
  const int64_t n_tok = 6, n_head = 3, head_dim = 40;
  auto x = gaussian(static_cast<size_t>(n_tok * n_head * head_dim), rng);
  std::vector<int32_t> pos = {0, 1, 17, 255, 4095, 70000};
  std::vector<float> inv_freq(static_cast<size_t>(n_rot / 2));
  for (size_t i = 0; i < inv_freq.size(); ++i) inv_freq[i] = std::pow(10000.0f, -2.0f * static_cast<float>(i) / n_rot);
  const CaiRopeParams p{style, n_rot, rot_offset, mscale};
  std::vector<float> want_cpu = x, want_ref = x;
  const TensorView pos_view = TensorView::make(pos.data(), DType::kI32, {n_tok});
  const TensorView freq_view = host_f32(inv_freq, {n_rot / 2});
  expect_ok(hal::cpu::rope({}, host_f32(want_cpu, {n_tok, n_head, head_dim}), pos_view, freq_view, p));
  expect_ok(ref().rope({}, host_f32(want_ref, {n_tok, n_head, head_dim}), pos_view, freq_view, p));
  for_each_warp([&](SimtDevice& dev) {
    CaiError err{};
    const CaiTensor dx = dev.upload_tensor(host_f32(x, {n_tok, n_head, head_dim}));
    const CaiTensor dpos = SimtDevice::tensor(dev.upload(pos), CAI_DTYPE_I32, {n_tok});
    const CaiTensor dfreq = dev.upload_tensor(freq_view);
    expect_ok(rope(dev.ctx(), dx, dpos, dfreq, p, &err), err);
    const auto got = dev.download<float>(dx.data, x.size());
    expect_close(got, want_cpu, 1e-5f, 1e-6f, "rope vs cpu");
    expect_close(got, want_ref, 1e-2f, 1e-2f, "rope vs reference");
    const CaiRopeParams bad{style, head_dim, 2, mscale};
    EXPECT_EQ(rope(dev.ctx(), dx, dpos, dfreq, bad, &err), CAI_ERR_INVALID_ARGUMENT);
  });
}

TEST(CudaRope, NormAndNeoxMatchCpu) {
  check_rope(CAI_ROPE_NORM, 40, 0, 1.0f);
  check_rope(CAI_ROPE_NEOX, 40, 0, 1.0f);
  check_rope(CAI_ROPE_NORM, 16, 24, 1.2f);  // partial rotation at an offset (MLA's rope part), YaRN mscale
  check_rope(CAI_ROPE_NEOX, 20, 4, 0.9f);
}

}  // namespace
}  // namespace cai::gpu::test
