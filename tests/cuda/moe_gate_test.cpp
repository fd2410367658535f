// simt tests (warp 32/64) of the MoE gate: ids equal to the CPU kernel's, weights within 1e-6.
#include <gtest/gtest.h>

#include <random>
#include <vector>

#include "cuda/expect_close.h"
#include "cuda/simt_test_util.h"
#include "hal/cpu/kernels/kernels.h"
#include "ops/ref/ref_ops.h"

namespace cai::gpu::test {
namespace {

struct GateResult {
  std::vector<int32_t> ids;
  std::vector<float> weights;
};

// Runs a host gate (CPU kernel or reference) over logits [n, E].
GateResult host_gate(decltype(hal::OpTable::moe_gate) gate, const CaiMoeGateParams& p, std::vector<float>& logits,
                     std::vector<float>* bias, int64_t n) {
  const auto n_out = static_cast<size_t>(n * p.top_k);
  GateResult r{std::vector<int32_t>(n_out), std::vector<float>(n_out)};
  const TensorView bias_view = bias ? host_f32(*bias, {p.n_experts}) : TensorView{};
  const Status st = gate({}, p, host_f32(logits, {n, p.n_experts}), bias ? &bias_view : nullptr,
                         TensorView::make(r.ids.data(), DType::kI32, {n, p.top_k}), host_f32(r.weights, {n, p.top_k}));
  EXPECT_TRUE(st.ok()) << st.to_string();
  return r;
}

void check_gate(const CaiMoeGateParams& p, bool with_bias, bool ties) {
  SCOPED_TRACE(std::to_string(p.n_experts) + " experts, top-" + std::to_string(p.top_k) + ", groups " +
               std::to_string(p.n_group) + "/" + std::to_string(p.topk_group) +
               (p.sigmoid ? ", sigmoid" : ", softmax") + (with_bias ? ", bias" : "") + (ties ? ", ties" : ""));
  std::mt19937 rng(21);
  const int64_t n = 33;
  auto logits = gaussian(static_cast<size_t>(n * p.n_experts), rng, 2.0f);
  if (ties)  // quantized logits: many exact ties between experts and between groups
    for (float& l : logits) l = std::round(l * 2.0f) / 2.0f;
  auto bias = gaussian(static_cast<size_t>(p.n_experts), rng, 0.1f);
  const GateResult want = host_gate(hal::cpu::moe_gate, p, logits, with_bias ? &bias : nullptr, n);
  for_each_warp([&](SimtDevice& dev) {
    CaiError err{};
    const CaiTensor d_bias = dev.upload_tensor(host_f32(bias, {p.n_experts}));
    const CaiTensor ids = SimtDevice::tensor(dev.alloc(want.ids.size() * sizeof(int32_t)), CAI_DTYPE_I32, {n, p.top_k});
    const CaiTensor weights = dev.zeros_f32({n, p.top_k});
    const CaiTensor d_logits = dev.upload_tensor(host_f32(logits, {n, p.n_experts}));
    ASSERT_EQ(moe_gate(dev.ctx(), p, d_logits, with_bias ? &d_bias : nullptr, ids, weights, &err), CAI_OK)
        << err.message;
    EXPECT_EQ(dev.download<int32_t>(ids.data, want.ids.size()), want.ids);
    expect_close(dev.download<float>(weights.data, want.weights.size()), want.weights, 1e-6f, 1e-7f, "weights");
  });
  if (!ties) {  // well-separated scores: the double-precision reference picks the same experts
    const GateResult ref = host_gate(ops::ref::op_table().moe_gate, p, logits, with_bias ? &bias : nullptr, n);
    EXPECT_EQ(ref.ids, want.ids);
  }
}

TEST(CudaMoeGate, MatchesCpuKernel) {
  for (bool ties : {false, true}) {
    check_gate({64, 6, 1, 1, 0, 0, 1.0f}, false, ties);    // V2-Lite: softmax, no groups
    check_gate({160, 6, 8, 3, 0, 0, 16.0f}, false, ties);  // V2: softmax, group max, routed scaling
    check_gate({256, 8, 8, 4, 1, 1, 2.5f}, true, ties);    // V3/R1: sigmoid + bias, top-2 group sums
    check_gate({72, 5, 4, 2, 1, 1, 1.0f}, true, ties);     // experts not a multiple of the warp
    check_gate({12, 3, 12, 3, 1, 0, 1.0f}, true, ties);    // one expert per group: group score = its score
  }
}

TEST(CudaMoeGate, RejectsInconsistentParams) {
  for_each_warp([&](SimtDevice& dev) {
    CaiError err{};
    const CaiTensor logits = dev.zeros_f32({2, 16}), w = dev.zeros_f32({2, 4});
    const CaiTensor ids = SimtDevice::tensor(dev.alloc(8 * sizeof(int32_t)), CAI_DTYPE_I32, {2, 4});
    EXPECT_EQ(moe_gate(dev.ctx(), CaiMoeGateParams{16, 5, 4, 1, 1, 0, 1.0f}, logits, nullptr, ids, w, &err),
              CAI_ERR_INVALID_ARGUMENT);  // 5 picks from one kept group of 4
    EXPECT_EQ(moe_gate(dev.ctx(), CaiMoeGateParams{16, 4, 4, 1, 1, 0, 1.0f}, logits, nullptr, w, w, &err),
              CAI_ERR_INVALID_ARGUMENT);  // F32 ids
    EXPECT_EQ(moe_gate(dev.ctx(), CaiMoeGateParams{16, 4, 4, 1, 1, 0, 1.0f}, logits, nullptr, ids, w, &err), CAI_OK)
        << err.message;
  });
}

}  // namespace
}  // namespace cai::gpu::test
