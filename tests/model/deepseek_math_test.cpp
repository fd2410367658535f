// DeepSeek numerics that implementations usually get wrong: YaRN frequencies and scales, and the expert gate.
#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "hal/hal.h"
#include "model/rope_freqs.h"
#include "model/config.h"
#include "model/layers/attention_mla.h"
#include "ops/ops.h"

namespace cai {
namespace {

ModelConfig deepseek_config(int rope_dim, float factor, int orig_ctx, int nope, float mscale_all_dim) {
  nlohmann::json cfg = {{"architectures", {"DeepseekV3ForCausalLM"}},
                        {"model_type", "deepseek_v3"},
                        {"hidden_size", 128},
                        {"num_hidden_layers", 1},
                        {"num_attention_heads", 4},
                        {"vocab_size", 512},
                        {"intermediate_size", 64},
                        {"kv_lora_rank", 32},
                        {"qk_nope_head_dim", nope},
                        {"qk_rope_head_dim", rope_dim},
                        {"v_head_dim", 16},
                        {"max_position_embeddings", 163840},
                        {"rope_theta", 10000.0},
                        {"rope_scaling",
                         {{"type", "yarn"},
                          {"factor", factor},
                          {"original_max_position_embeddings", orig_ctx},
                          {"beta_fast", 32},
                          {"beta_slow", 1},
                          {"mscale", mscale_all_dim},
                          {"mscale_all_dim", mscale_all_dim}}}};
  Result<ModelConfig> c = config_from_hf(cfg);
  EXPECT_TRUE(c.ok()) << c.status().to_string();
  return c.value();
}

// tests/data/oracle/deepseek_v3_tiny/README.md: inv_freq [1, 0.0625, 0.0025, 0.00025], scale 0.26464226.
TEST(DeepSeekMath, TinyOracleYarnConstants) {
  const ModelConfig c = deepseek_config(8, 4.0f, 256, 16, 1.0f);
  const std::vector<float> f = rope_inv_freqs(c.rope_freq_config());
  const std::vector<float> want = {1.0f, 0.0625f, 0.0025f, 0.00025f};
  ASSERT_EQ(f.size(), want.size());
  for (size_t i = 0; i < f.size(); ++i) EXPECT_NEAR(f[i], want[i], 1e-7f * (1 + want[i]));
  EXPECT_NEAR(AttentionMla::softmax_scale(c), 0.26464226f, 1e-7f);
  EXPECT_EQ(c.rope_style, hal::RopeStyle::kNorm);
}

// docs/design/formats.md#yarn: V3/R1 (d 64, s 40, L 4096, β 32/1) → low 10, high 23, m = 1.36889, scale 0.135234.
TEST(DeepSeekMath, R1YarnConstants) {
  const ModelConfig c = deepseek_config(64, 40.0f, 4096, 128, 1.0f);
  const std::vector<float> f = rope_inv_freqs(c.rope_freq_config());
  for (int i = 0; i < 32; ++i) {
    const double base = std::pow(10000.0, -2.0 * i / 64);
    const double ramp = std::clamp((i - 10) / 13.0, 0.0, 1.0);  // 0 up to low = 10, 1 from high = 23
    const double want = base / 40.0 * ramp + base * (1 - ramp);
    EXPECT_NEAR(f[static_cast<size_t>(i)], want, 1e-6 * want) << i;
  }
  EXPECT_NEAR(yarn_get_mscale(40.0f, 1.0f), 1.36889f, 1e-5f);
  EXPECT_NEAR(AttentionMla::softmax_scale(c), 0.135234f, 1e-6f);
}

struct GateCase {
  std::vector<float> logits;
  std::vector<float> bias;
  hal::MoeGateParams p;
};

// Runs the gate of the CPU backend on one token.
std::pair<std::vector<int32_t>, std::vector<float>> run_gate(const GateCase& g) {
  hal::Device* cpu = hal::Registry::global().find_device("cpu").value();
  std::vector<float> logits = g.logits, bias = g.bias, w(static_cast<size_t>(g.p.top_k));
  std::vector<int32_t> ids(static_cast<size_t>(g.p.top_k));
  TensorView bv = TensorView::make(bias.data(), DType::kF32, {g.p.n_experts});
  Status st = ops::moe_gate(*cpu, g.p, TensorView::make(logits.data(), DType::kF32, {1, g.p.n_experts}),
                            bias.empty() ? nullptr : &bv, TensorView::make(ids.data(), DType::kI32, {1, g.p.top_k}),
                            TensorView::make(w.data(), DType::kF32, {1, g.p.top_k}));
  EXPECT_TRUE(st.ok()) << st.to_string();
  return {ids, w};
}

TEST(DeepSeekGate, TiesGoToTheLowerExpertId) {
  auto [ids, w] = run_gate({{0.5f, 1.0f, 1.0f, 1.0f, 0.2f, 1.0f}, {}, {6, 2, 1, 1, true, false, 1.0f}});
  EXPECT_EQ(ids, (std::vector<int32_t>{1, 2}));
}

TEST(DeepSeekGate, OnlyTheBestGroupsAreEligible) {
  // Groups {0,1} {2,3} {4,5}; group score = sum of its top-2 biased scores. Expert 0 is the single best expert, but its
  // group {0,1} scores lowest, so with topk_group = 2 it must not be chosen.
  GateCase g{{3.0f, -3.0f, 1.0f, 1.0f, 0.9f, 0.8f}, {0, 0, 0, 0, 0, 0}, {6, 2, 3, 2, true, false, 1.0f}};
  auto [ids, w] = run_gate(g);
  EXPECT_EQ(ids, (std::vector<int32_t>{2, 3}));
  g.p.topk_group = 3;  // all groups eligible → expert 0 wins
  EXPECT_EQ(run_gate(g).first[0], 0);
}

TEST(DeepSeekGate, BiasSelectsButDoesNotWeigh) {
  // Expert 3 has the lowest score but a large correction bias: it is selected, and its weight comes from its
  // unbiased sigmoid score; weights are normalised then scaled by 2.5.
  GateCase g{{1.0f, 0.5f, 0.0f, -1.0f}, {0.0f, 0.0f, 0.0f, 2.0f}, {4, 2, 1, 1, true, true, 2.5f}};
  auto [ids, w] = run_gate(g);
  EXPECT_EQ(ids, (std::vector<int32_t>{3, 0}));
  const float s3 = 1 / (1 + std::exp(1.0f)), s0 = 1 / (1 + std::exp(-1.0f));
  EXPECT_NEAR(w[0], s3 / (s3 + s0) * 2.5f, 1e-6f);
  EXPECT_NEAR(w[1], s0 / (s3 + s0) * 2.5f, 1e-6f);
}

TEST(DeepSeekGate, SoftmaxScoringWithoutNormalisation) {
  auto [ids, w] = run_gate({{2.0f, 1.0f, 0.0f}, {}, {3, 1, 1, 1, false, false, 1.0f}});
  const float z = std::exp(2.0f) + std::exp(1.0f) + 1.0f;
  EXPECT_EQ(ids[0], 0);
  EXPECT_NEAR(w[0], std::exp(2.0f) / z, 1e-6f);
}

TEST(DeepSeekGate, InconsistentParamsAreErrors) {
  hal::Device* cpu = hal::Registry::global().find_device("cpu").value();
  std::vector<float> l(6), w(2);
  std::vector<int32_t> ids(2);
  hal::MoeGateParams p{6, 2, 4, 2, true, false, 1.0f};  // 6 experts do not split into 4 groups
  EXPECT_FALSE(ops::moe_gate(*cpu, p, TensorView::make(l.data(), DType::kF32, {1, 6}), nullptr,
                             TensorView::make(ids.data(), DType::kI32, {1, 2}),
                             TensorView::make(w.data(), DType::kF32, {1, 2}))
                   .ok());
}

}  // namespace
}  // namespace cai
