// make_plan on presets: numbers checked by hand from published configs and parameter counts, fit decisions against
// the chip profiles, layouts, KV offload, roofline decode, monotonicity, and speed of planning the 671B model.
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cmath>

#include "chips/planner.h"

namespace cai::chips {
namespace {

constexpr double kGiB = 1024.0 * 1024.0 * 1024.0;

DeviceProfile chip(double gib, std::optional<double> bw = {}, std::optional<double> tflops = {},
                   std::optional<bool> fp8 = {}, std::optional<double> offload = {}) {
  DeviceProfile p;
  p.id = "test-chip";
  p.memory_gib = gib;
  p.bandwidth_gbs = bw;
  p.bf16_tflops = tflops;
  p.fp8 = fp8;
  p.policies.backend = "cuda";
  p.policies.host_offload_below = offload;
  return p;
}

ModelFootprint preset(const std::string& name) {
  Result<ModelFootprint> fp = load_footprint("preset:" + name);
  EXPECT_TRUE(fp.ok()) << fp.status().to_string();
  return fp.ok() ? *fp : ModelFootprint{};
}

PlanRequest request(int cards, int64_t ctx = 0, int batch = 1, std::string kv_dtype = "") {
  PlanRequest r;
  r.cards = cards;
  r.ctx = ctx;
  r.batch = batch;
  r.kv_dtype = std::move(kv_dtype);
  return r;
}

Plan plan(const ModelFootprint& m, const DeviceProfile& c, int cards, int64_t ctx = 0, int batch = 1) {
  Result<Plan> p = make_plan(m, c, request(cards, ctx, batch));
  EXPECT_TRUE(p.ok()) << p.status().to_string();
  return p.ok() ? *p : Plan{};
}

bool has_warning(const Plan& p, const std::string& part) {
  return std::any_of(p.warnings.begin(), p.warnings.end(),
                     [&](const std::string& w) { return w.find(part) != std::string::npos; });
}

const DeviceProfile kH200 = chip(141, 4800, 989, true);

TEST(Planner, R1KvIsTheMlaLatent) {
  const ModelFootprint r1 = preset("deepseek-r1");
  EXPECT_EQ(plan(r1, kH200, 8).kv_bytes_per_token, 61u * (512 + 64) * 2);  // 70,272 B at BF16
  EXPECT_EQ(make_plan(r1, kH200, request(8, 4096, 1, "f32"))->kv_bytes_per_token, 61u * 576 * 4);
}

// DeepSeek-V3 report: 671B parameters without the 14B MTP module. BF16 (config.json + DS model.py): embeddings and
// LM head (2 × 129280 × 7168), the 58 MoE routers (256 × 7168) and every norm; F32: the 58 correction biases [256];
// all other parameters are FP8 with one F32 scale per 128 × 128 block.
TEST(Planner, R1WeightsAreThePublished671BAtFp8PlusBf16) {
  const ModelFootprint r1 = preset("deepseek-r1");
  const double bf16 = 2.0 * 129280 * 7168 + 58.0 * 256 * 7168 + 61.0 * (2 * 7168 + 1536 + 512) + 7168;
  const double f32 = 58.0 * 256, fp8 = 671e9 - bf16 - f32;
  const double expected = fp8 * (1 + 4.0 / (128 * 128)) + 2 * bf16 + 4 * f32;
  const Plan p = plan(r1, kH200, 8);
  EXPECT_NEAR(static_cast<double>(p.weights_bytes), expected, 0.01 * expected);
  EXPECT_NEAR(static_cast<double>(r1.params()), 671e9, 0.01 * 671e9);
  EXPECT_NEAR(static_cast<double>(p.active_params), 37e9, 0.03 * 37e9);  // "37B activated" (report)
  EXPECT_TRUE(r1.fp8_weights);
}

TEST(Planner, R1FitsOnEightH200NotOnOne64GiBCard) {
  const ModelFootprint r1 = preset("deepseek-r1");
  const Plan eight = plan(r1, kH200, 8);
  EXPECT_TRUE(eight.fits);
  EXPECT_EQ(eight.layout.tensor_parallel, 8);
  EXPECT_EQ(eight.layout.expert_parallel, 8);
  EXPECT_EQ(eight.layout.pipeline_parallel, 1);
  EXPECT_EQ(eight.max_context, 163840);
  const Plan one = plan(r1, chip(64), 1);
  EXPECT_FALSE(one.fits);
  EXPECT_FALSE(one.weights_fit);
  EXPECT_EQ(one.max_context, 0);
  EXPECT_TRUE(has_warning(one, "does not fit"));
}

// 16 × 64 GiB: one node of 8 cannot hold 627 GiB of weights, two pipeline stages of 8 can.
TEST(Planner, R1On16Cards64GiBUsesTwoPipelineStages) {
  const Plan p = plan(preset("deepseek-r1"), chip(64, {}, {}, false), 16);
  EXPECT_TRUE(p.fits);
  EXPECT_EQ(p.layout.pipeline_parallel, 2);
  ASSERT_EQ(p.layout.stages.size(), 2u);
  EXPECT_EQ(p.layout.stages[0].first_layer, 0);
  EXPECT_EQ(p.layout.stages[0].n_layers, 31);
  EXPECT_EQ(p.layout.stages[1].n_layers, 30);
  EXPECT_EQ(p.kv_bytes_per_token_per_card, 31u * 576 * 2);  // the first stage's layers, whole latent on each card
  EXPECT_EQ(p.min_cards, 16);
  EXPECT_TRUE(has_warning(p, "FP8 weights"));
  EXPECT_FALSE(p.decode_tok_s_per_sequence.has_value());  // no bandwidth in this profile
  EXPECT_FALSE(p.prefill_tok_s.has_value());
}

TEST(Planner, MaxContextIsMonotoneInCards) {
  for (const auto& [name, gib] : {std::pair<std::string, double>{"deepseek-r1", 64}, {"r1-distill-qwen-32b", 24}}) {
    const ModelFootprint m = preset(name);
    int64_t last = 0;
    for (int cards = 1; cards <= 40; ++cards) {
      const Plan p = plan(m, chip(gib), cards, 32768, 16);
      EXPECT_GE(p.max_context, last) << name << " on " << cards << " cards";
      last = p.max_context;
    }
    EXPECT_GT(last, 0) << name;
  }
}

TEST(Planner, Plans671BInUnder100Ms) {
  const auto t0 = std::chrono::steady_clock::now();
  Result<ModelFootprint> r1 = load_footprint("preset:deepseek-r1");
  ASSERT_TRUE(r1.ok());
  ASSERT_TRUE(make_plan(*r1, kH200, request(8)).ok());
  const double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  EXPECT_LT(ms, 100.0);
}

// Qwen2 with biases, untied head: embeddings + 28 × (q, k, v, o + biases, SwiGLU, 2 norms) + final norm + head.
int64_t qwen_params(int64_t h, int64_t ffn, int64_t layers, int64_t heads, int64_t kv, int64_t vocab) {
  const int64_t hd = h / heads, q = heads * hd, k = kv * hd;
  const int64_t layer = h * q + 2 * h * k + q * h + q + 2 * k + 3 * h * ffn + 2 * h;
  return 2 * vocab * h + layers * layer + h;
}

TEST(Planner, Qwen15BByHand) {
  const ModelFootprint m = preset("r1-distill-qwen-1.5b");
  EXPECT_EQ(m.params(), qwen_params(1536, 8960, 28, 12, 2, 151936));
  EXPECT_EQ(m.weight_bytes(), 2u * static_cast<size_t>(m.params()));
  const Plan one = plan(m, kH200, 1, 4096);
  EXPECT_EQ(one.kv_bytes_per_token, 28u * 2 * 2 * 128 * 2);  // layers × (K, V) × 2 KV heads × head_dim × BF16
  // 8 cards but 2 KV heads: each card keeps one head, so KV per card is half, not an eighth.
  const Plan eight = plan(m, kH200, 8, 4096);
  EXPECT_EQ(eight.kv_bytes_per_token_per_card, 28u * 2 * 1 * 128 * 2);
  EXPECT_TRUE(has_warning(eight, "replicated"));
}

// One H100 (80 GiB, 3350 GB/s): a decode step streams every weight but the embedding table (only a row is read) and
// the KV of 4096 positions; 7.6B parameters at 2 FLOP each are far below the memory time, so it is memory-bound.
TEST(Planner, Qwen7BDecodeRooflineByHand) {
  const ModelFootprint m = preset("r1-distill-qwen-7b");
  EXPECT_EQ(m.params(), qwen_params(3584, 18944, 28, 28, 4, 152064));
  const Plan p = plan(m, chip(80, 3350, 989, true), 1, 4096);
  ASSERT_TRUE(p.fits);
  const double kv = 28.0 * 2 * 4 * 128 * 2;
  EXPECT_EQ(p.kv_bytes_per_token, static_cast<size_t>(kv));
  const double bytes = static_cast<double>(m.weight_bytes() - m.embedding.bytes) + 4096 * kv;
  ASSERT_TRUE(p.decode_tok_s_per_sequence.has_value());
  EXPECT_NEAR(*p.decode_tok_s_per_sequence, 3350e9 * kBandwidthEfficiency / bytes, 1e-6 * *p.decode_tok_s_per_sequence);
  EXPECT_EQ(p.decode_bound, "memory");
  EXPECT_EQ(p.max_context, 131072);
  ASSERT_TRUE(p.prefill_tok_s.has_value());
  EXPECT_GT(*p.prefill_tok_s, 1000.0);
}

// Qwen-7B on 2 cards with a 100 GB/s link: tensor parallel adds two ring all-reduces per layer of the batch's F32
// hidden states (2·(tp-1)/tp of them cross the link) plus a fixed latency each, to the decode step and the prefill;
// the same model and cards without interconnect_gbs leave it out and say so.
TEST(Planner, TensorParallelAddsTheAllReducesOverTheInterconnect) {
  const ModelFootprint m = preset("r1-distill-qwen-7b");
  DeviceProfile linked = chip(80, 3350, 989, true);
  linked.interconnect_gbs = 100;
  const Plan with = plan(m, linked, 2, 4096, 4);
  const Plan without = plan(m, chip(80, 3350, 989, true), 2, 4096, 4);
  ASSERT_EQ(with.layout.tensor_parallel, 2);
  const auto comm = [](double tokens) {
    return 28 * 2 * (2 * 0.5 * tokens * 3584 * 4 / (100e9 * kLinkEfficiency) + kCollectiveLatencyUs * 1e-6);
  };
  ASSERT_TRUE(with.decode_comm_ms && with.prefill_comm_seconds);
  EXPECT_NEAR(*with.decode_comm_ms, comm(4) * 1e3, 1e-9);
  EXPECT_NEAR(*with.decode_step_ms, *without.decode_step_ms + comm(4) * 1e3, 1e-9);
  EXPECT_NEAR(*with.prefill_comm_seconds, comm(4096), 1e-9);
  EXPECT_NEAR(*with.prefill_seconds, *without.prefill_seconds + comm(4096), 1e-9);
  EXPECT_FALSE(without.decode_comm_ms.has_value());
  EXPECT_TRUE(has_warning(without, "no interconnect_gbs"));
  EXPECT_FALSE(has_warning(with, "no interconnect_gbs"));
  // One card moves nothing between cards.
  const Plan one = plan(m, linked, 1, 4096, 4);
  EXPECT_FALSE(one.decode_comm_ms.has_value());
  EXPECT_FALSE(has_warning(plan(m, chip(80, 3350, 989, true), 1, 4096), "no interconnect_gbs"));
}

// R1 on 16 cards of 64 GiB: two pipeline stages, and tensor and expert parallel inside each; the stage boundary adds
// one transfer, so the communication time exceeds the same layout's collectives alone.
TEST(Planner, ExpertParallelAndStagesAddTheirTransfers) {
  const ModelFootprint r1 = preset("deepseek-r1");
  DeviceProfile c = chip(64, 1600, 400, true);
  c.interconnect_gbs = 50;
  const Plan p = plan(r1, c, 16, 4096, 8);
  ASSERT_EQ(p.layout.stages.size(), 2u);
  ASSERT_EQ(p.layout.expert_parallel, 8);
  const double tp = p.layout.tensor_parallel, ep = 8, link = 50e9 * kLinkEfficiency, lat = kCollectiveLatencyUs * 1e-6;
  const double hidden = 8.0 * 7168 * 4;  // batch 8, F32
  const double expected = 61 * 2 * (2 * (tp - 1) / tp * hidden / link + lat) +
                          58 * 2 * ((ep - 1) / ep * 8 * hidden / link + lat) + (hidden / link + lat);
  ASSERT_TRUE(p.decode_comm_ms.has_value());
  EXPECT_NEAR(*p.decode_comm_ms, expected * 1e3, 1e-9);
}

// Llama-8B on one 24 GiB card at 128K context: 15 GiB of weights leave room for ~60K tokens of 128 KiB each.
TEST(Planner, Llama8BNeedsTwoCardsFor128K) {
  const ModelFootprint m = preset("r1-distill-llama-8b");
  const Plan p = plan(m, chip(24, 1000, 100), 1, 131072);
  EXPECT_EQ(p.kv_bytes_per_token, 32u * 2 * 8 * 128 * 2);
  EXPECT_TRUE(p.weights_fit);
  EXPECT_FALSE(p.fits);
  const double free = 24 * kGiB * (1 - kRuntimeReserve) - static_cast<double>(m.weight_bytes());
  EXPECT_LE(p.max_context, static_cast<int64_t>(free / 131072));
  EXPECT_GE(p.max_context, static_cast<int64_t>((free - kGiB) / 131072));  // activations take under 1 GiB
  EXPECT_EQ(p.min_cards, 2);
  EXPECT_TRUE(plan(m, chip(24, 1000, 100), 2, 131072).fits);
}

// Qwen-7B, batch 4 × 128K on one 32 GiB card: the KV needs 28 GiB but ~15 GiB are free, so with the profile's
// host_offload_below = 1.0 the layers that do not fit go to host memory, exactly as many as needed: the card keeps
// its layers plus the one staging layer the host tier streams through.
TEST(Planner, KvOffloadMovesJustEnoughLayers) {
  const ModelFootprint m = preset("r1-distill-qwen-7b");
  const Plan none = plan(m, chip(32, 1000, 100), 1, 131072, 4);
  EXPECT_FALSE(none.fits);
  EXPECT_EQ(none.kv_offload_layers, 0);
  const Plan p = plan(m, chip(32, 1000, 100, {}, 1.0), 1, 131072, 4);
  EXPECT_TRUE(p.fits);
  ASSERT_GT(p.kv_offload_layers, 0);
  ASSERT_LT(p.kv_offload_layers, 28);
  const double layer_kv = 4.0 * 131072 * 2 * 4 * 128 * 2;
  const double budget = 32 * kGiB - static_cast<double>(p.reserved_bytes_per_card + p.weights_bytes_per_card +
                                                        p.activation_bytes_per_card);
  EXPECT_LE((28 - p.kv_offload_layers + 1) * layer_kv, budget);
  EXPECT_GT((28 - p.kv_offload_layers + 2) * layer_kv, budget);
  EXPECT_EQ(p.kv_host_bytes, static_cast<size_t>(p.kv_offload_layers * layer_kv));
  EXPECT_TRUE(has_warning(p, "host memory"));
}

// The engine's step budget sizes the activations (per-token workspace × max(step tokens, batch) + batch logits rows),
// and the layers sent to host memory can only fall as the smaller workspace frees card memory. 0 is refused.
TEST(Planner, StepTokensSizeTheActivations) {
  const ModelFootprint m = preset("r1-distill-qwen-7b");
  PlanRequest r = request(1, 131072, 4);
  const Plan p512 = make_plan(m, chip(32, 1000, 100, {}, 1.0), r).value();
  r.step_tokens = 128;
  const Plan p128 = make_plan(m, chip(32, 1000, 100, {}, 1.0), r).value();
  EXPECT_EQ(p512.request.step_tokens, kStepTokens);
  const size_t per_token = activation_bytes_per_token(m.config), logits = logits_bytes_per_row(m.config) * 4;
  EXPECT_EQ(p512.activation_bytes_per_card, per_token * 512 + logits);
  EXPECT_EQ(p128.activation_bytes_per_card, per_token * 128 + logits);
  EXPECT_GT(p512.kv_offload_layers, 0);
  EXPECT_LE(p128.kv_offload_layers, p512.kv_offload_layers);
  r.step_tokens = 0;
  EXPECT_EQ(make_plan(m, chip(32, 1000, 100, {}, 1.0), r).status().code(), StatusCode::kInvalidArgument);
}

// Both steps are memory-bound on 8 × H200; going from 1 to 32 sequences adds the experts the extra tokens touch
// (expected distinct experts E·(1 − (1 − k/E)^B) = 163.4 of 256 per layer instead of 8, spread over 8 cards) and 31
// more sequences' latent KV (whole on every card), read at 80% of 4.8 TB/s.
TEST(Planner, MoeDecodeReadsTheExpectedDistinctExperts) {
  const ModelFootprint r1 = preset("deepseek-r1");
  const Plan b1 = plan(r1, kH200, 8, 256, 1), b32 = plan(r1, kH200, 8, 256, 32);
  ASSERT_TRUE(b1.decode_step_ms && b32.decode_step_ms);
  ASSERT_EQ(b32.decode_bound, "memory");
  const double touched = 256 * (1 - std::pow(1 - 8.0 / 256, 32));
  const double expert = static_cast<double>(r1.layers[3].experts.bytes) / 256;  // one expert of one MoE layer
  const double extra = (touched - 8) * expert * 58 / 8 + 31.0 * 256 * 61 * 576 * 2;
  EXPECT_NEAR(*b32.decode_step_ms - *b1.decode_step_ms, extra / (4800e9 * 0.8) * 1e3, 1e-3);
  EXPECT_GT(*b32.decode_tok_s_aggregate, 2 * *b1.decode_tok_s_aggregate);
  EXPECT_LT(*b32.decode_tok_s_per_sequence, *b1.decode_tok_s_per_sequence);
}

TEST(Planner, BadRequestsAreErrors) {
  const ModelFootprint m = preset("r1-distill-qwen-1.5b");
  EXPECT_FALSE(make_plan(m, kH200, request(0, 0, 1)).ok());
  EXPECT_FALSE(make_plan(m, kH200, request(1, 0, 0)).ok());
  EXPECT_FALSE(make_plan(m, kH200, request(1, 0, 1, "int4")).ok());
  DeviceProfile no_memory = kH200;
  no_memory.memory_gib.reset();
  Result<Plan> r = make_plan(m, no_memory, request(1, 0, 1));
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("--memory-gib"), std::string::npos);
  PlanRequest with_memory = request(1, 4096);
  with_memory.memory_gib = 16;
  EXPECT_TRUE(make_plan(m, no_memory, with_memory).ok());
}

// The shipped profiles (issue 11, "must show"): R1 FP8 fits on 8 × H200, not on 4; 8 × Ascend 910B2 cannot hold it
// and says so, with the FP8 warning.
TEST(Planner, ShippedProfiles) {
  Result<std::vector<DeviceProfile>> profiles = load_profiles(default_profile_dir());
  ASSERT_TRUE(profiles.ok()) << profiles.status().to_string();
  const DeviceProfile* h200 = find_profile(*profiles, "nvidia-h200-sxm");
  const DeviceProfile* ascend = find_profile(*profiles, "ascend-910b2");
  ASSERT_TRUE(h200 && ascend);
  const ModelFootprint r1 = preset("deepseek-r1");
  EXPECT_TRUE(plan(r1, *h200, 8).fits);
  EXPECT_FALSE(plan(r1, *h200, 4).fits);
  const Plan a = plan(r1, *ascend, 8);
  EXPECT_FALSE(a.fits);
  EXPECT_EQ(a.min_cards, 16);
  EXPECT_TRUE(has_warning(a, "FP8 weights"));
  EXPECT_TRUE(has_warning(a, "at least 16 cards"));
}

}  // namespace
}  // namespace cai::chips
