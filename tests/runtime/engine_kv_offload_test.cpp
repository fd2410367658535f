// The host KV tier on the simt device: with some or all layers' KV in host memory the engine returns exactly the
// tokens of an all-device cache (GQA and MLA, concurrent sequences, chunked prefill, prefix reuse), reports the tier
// in its stats, and refuses what cannot work with a clear error.
#include <gtest/gtest.h>

#include "engine_test_util.h"
#include "model/kv_cache.h"
#include "model/model_loader.h"

namespace cai {
namespace {

using test::Collector;
using test::greedy;
using test::load;

struct OffloadCase {
  const char* model;
  int n_layers;
  std::vector<int> host_layers;  // the counts to try (each run costs seconds on the emulated device)
};

class EngineKvOffload : public ::testing::TestWithParam<OffloadCase> {};

// Prompts of 18 to 60 tokens (2 to 4 blocks of 16), ids inside the vocabulary of every model here (512 and up).
std::vector<int32_t> prompt(int i) {
  std::vector<int32_t> p;
  for (int j = 0; j < 18 + i * 29 % 45; ++j) p.push_back(static_cast<int32_t>((i * 131 + j * 17 + 5) % 500 + 3));
  return p;
}

struct ServedRun {
  std::vector<std::vector<int32_t>> tokens;
  EngineStats stats;
};

// Four concurrent requests through a 40-token step budget (prompts are prefilled in chunks), then the first prompt
// again: its full blocks come from the prefix cache, so its attention reads KV an earlier request wrote.
ServedRun serve(LoadedModel model, int host_layers) {
  EngineOptions o;
  o.max_batch = 4;
  o.max_tokens_per_step = 40;
  o.block_size = 16;
  o.n_kv_blocks = 40;
  o.kv_offload_layers = host_layers;
  auto engine = Engine::create(std::move(model), o);
  EXPECT_TRUE(engine.ok()) << engine.status().to_string();
  ServedRun run;
  if (!engine.ok()) return run;
  Engine& e = **engine;
  std::vector<Collector> together(4);
  for (int i = 0; i < 4; ++i)
    EXPECT_TRUE(e.submit(greedy(prompt(i), 6), together[static_cast<size_t>(i)].callback()).ok());
  for (Collector& c : together) {
    c.wait();
    run.tokens.push_back(c.tokens);
  }
  run.tokens.push_back(test::run_alone(e, greedy(prompt(0), 6)));
  run.stats = e.stats();
  return run;
}

TEST_P(EngineKvOffload, HostLayersGiveTheTokensOfAnAllDeviceCache) {
  const OffloadCase c = GetParam();
  const ServedRun device = serve(load(c.model, "simt:0"), 0);
  ASSERT_EQ(device.tokens.size(), 5u);
  EXPECT_EQ(device.stats.kv_offload_layers, 0);
  EXPECT_EQ(device.stats.kv_offload_uploaded_bytes, 0u);
  EXPECT_GT(device.stats.prefix_hit_tokens, 0u);  // the repeated prompt really read cached blocks
  for (int host_layers : c.host_layers) {
    SCOPED_TRACE(testing::Message() << host_layers << " host layers");
    const ServedRun offloaded = serve(load(c.model, "simt:0"), host_layers);
    EXPECT_EQ(offloaded.tokens, device.tokens);
    const EngineStats& s = offloaded.stats;
    EXPECT_EQ(s.kv_offload_layers, host_layers);
    // Each host layer holds every slot's K and V row: bytes_per_token / n_layers per slot.
    EXPECT_EQ(s.kv_host_bytes,
              s.kv_bytes_per_token / static_cast<uint64_t>(c.n_layers) * static_cast<uint64_t>(host_layers) * 40 * 16);
    EXPECT_GT(s.kv_offload_uploaded_bytes, 0u);
    EXPECT_GT(s.kv_offload_downloaded_bytes, 0u);
    EXPECT_EQ(s.prefix_hit_tokens, device.stats.prefix_hit_tokens);
  }
}

INSTANTIATE_TEST_SUITE_P(Models, EngineKvOffload,
                         ::testing::Values(OffloadCase{"models/TinyStories-656K-Q8_0.gguf", 2, {1, 2}},
                                           OffloadCase{"oracle/deepseek_v3_tiny", 4, {2}}),
                         [](const auto& info) { return info.index == 0 ? std::string("gqa") : std::string("mla"); });

TEST(EngineKvOffloadErrors, MoreLayersThanTheModelHasIsAnError) {
  EngineOptions o;
  o.kv_offload_layers = 3;
  auto engine = Engine::create(load("models/TinyStories-656K-Q8_0.gguf", "simt:0"), o);
  ASSERT_FALSE(engine.ok());
  EXPECT_EQ(engine.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(engine.status().message().find("--kv-offload-layers 3: the model has 2 layers"), std::string::npos)
      << engine.status().message();
}

// On the CPU the cache is in host memory already: the option is ignored, not an error.
TEST(EngineKvOffloadErrors, TheCpuKeepsEveryLayerWhereItIs) {
  EngineOptions o;
  o.kv_offload_layers = 2;
  auto engine = Engine::create(load("models/TinyStories-656K-Q8_0.gguf"), o);
  ASSERT_TRUE(engine.ok()) << engine.status().to_string();
  EXPECT_EQ((*engine)->stats().kv_offload_layers, 0);
}

// A device too small even for the layers it keeps: the error says how device memory was being split.
TEST(EngineKvOffloadErrors, ADeviceTooSmallSaysWhatItNeeded) {
  EngineOptions o;
  o.kv_offload_layers = 1;
  o.n_kv_blocks = 1 << 22;  // 64M slots × 256 bytes per layer: 16 GiB per layer, above the simt pool
  auto engine = Engine::create(load("models/TinyStories-656K-Q8_0.gguf", "simt:0"), o);
  ASSERT_FALSE(engine.ok());
  EXPECT_NE(engine.status().message().find("with 1 of 2 layers in host memory needs"), std::string::npos)
      << engine.status().message();
}

// Over pipeline stages, each stage whose devices have memory of their own gives its last layers, in proportion to its
// layers; stages on the CPU give none.
TEST(KvOffloadLayers, StagesShareTheLayersInProportion) {
  hal::Device* simt = test::device_named("simt:0");
  hal::Device* cpu = test::device_named("cpu");
  ASSERT_NE(simt, nullptr);
  ASSERT_NE(cpu, nullptr);
  auto layers = [](std::vector<std::pair<hal::Device*, int>> stages) {
    std::vector<std::vector<KvShard>> out;
    for (const auto& [device, n] : stages)
      for (int i = 0; i < n; ++i) out.push_back({{device, 32, 32}});
    return out;
  };
  auto host = [](const std::vector<std::vector<KvShard>>& l, int n) {
    Result<std::vector<int>> r = host_kv_layers(l, n);
    EXPECT_TRUE(r.ok()) << r.status().to_string();
    return r.ok() ? *r : std::vector<int>{};
  };
  EXPECT_EQ(host(layers({{simt, 4}}), 2), (std::vector<int>{2, 3}));
  EXPECT_EQ(host(layers({{simt, 4}}), 0), std::vector<int>{});
  // simt | cpu | simt: the two device stages (4 and 2 layers) share 3 as 2 and 1; the CPU stage keeps its layers.
  const auto mixed = layers({{simt, 4}, {cpu, 3}, {simt, 2}});
  EXPECT_EQ(host(mixed, 3), (std::vector<int>{2, 3, 8}));
  EXPECT_EQ(host(mixed, 6), (std::vector<int>{0, 1, 2, 3, 7, 8}));
  Result<std::vector<int>> too_many = host_kv_layers(mixed, 7);
  ASSERT_FALSE(too_many.ok());
  EXPECT_NE(too_many.status().message().find("only 6 of the 9 layers run on devices with memory of their own"),
            std::string::npos)
      << too_many.status().message();
  Result<std::vector<int>> all_cpu = host_kv_layers(layers({{cpu, 2}}), 1);
  ASSERT_FALSE(all_cpu.ok());
  EXPECT_NE(all_cpu.status().message().find("whose memory the host addresses (cpu:0)"), std::string::npos)
      << all_cpu.status().message();
  // A tensor-parallel stage with a rank on the CPU keeps its layers on the devices.
  const std::vector<std::vector<KvShard>> tp(3, {{simt, 16, 16}, {cpu, 16, 16}});
  EXPECT_FALSE(host_kv_layers(tp, 1).ok());
}

// A model over the CPU and simt:0 as two pipeline stages: the host layers come from the simt stage, the tokens are
// those of the same layout without them, and the stats count the simt stage's tier.
TEST(EngineKvOffloadStages, TheDeviceStageOffloadsAndTheTokensStay) {
  hal::Device* simt = test::device_named("simt:0");
  hal::Device* cpu = test::device_named("cpu");
  ASSERT_NE(simt, nullptr);
  ASSERT_NE(cpu, nullptr);
  Layout layout;
  layout.devices = {cpu, simt};
  auto run = [&](int host_layers) {
    LoadOptions lo;
    lo.kv_dtype = DType::kF32;
    Result<LoadedModel> m = load_model(test::data_path("oracle/deepseek_v3_tiny"), layout, lo);
    EXPECT_TRUE(m.ok()) << m.status().to_string();
    return m.ok() ? serve(std::move(*m), host_layers) : ServedRun{};
  };
  const ServedRun device = run(0);
  const ServedRun offloaded = run(1);  // layers 0..1 on the CPU, 2..3 on simt:0: layer 3 goes to host memory
  ASSERT_EQ(device.tokens.size(), 5u);
  EXPECT_EQ(offloaded.tokens, device.tokens);
  EXPECT_EQ(offloaded.stats.kv_offload_layers, 1);
  EXPECT_EQ(offloaded.stats.kv_host_bytes, offloaded.stats.kv_bytes_per_token / 4 * 40 * 16);
  EXPECT_GT(offloaded.stats.kv_offload_uploaded_bytes, 0u);
  EXPECT_GT(offloaded.stats.kv_offload_downloaded_bytes, 0u);
}

// KvCache::create itself: a block-quantized cache cannot take host layers (its rows come back through F32).
TEST(EngineKvOffloadErrors, QuantizedCachesAreNotOffloaded) {
  hal::Device* simt = test::device_named("simt:0");
  ASSERT_NE(simt, nullptr);
  const KvHostTier::Shape shape{DType::kQ8_0, 32, 32, 64, 16, 8};
  Result<KvHostTier> tier = KvHostTier::create(*simt, shape, {1});
  ASSERT_FALSE(tier.ok());
  EXPECT_NE(tier.status().message().find("q8_0 KV cache cannot be offloaded"), std::string::npos)
      << tier.status().message();
}

}  // namespace
}  // namespace cai
