// Checkpoint loading leaves DeepSeek's multi-token-prediction layers (indices past num_hidden_layers) unread.
#include <gtest/gtest.h>

#include "hal/hal.h"
#include "model/loaders/mla_weights.h"
#include "model/loaders/safetensors.h"
#include "model/weights.h"
#include "test_paths.h"

namespace cai {
namespace {

TEST(HfLayerIndex, ReadsTheDecoderLayerOfATensorName) {
  EXPECT_EQ(hf_layer_index("model.layers.12.self_attn.kv_a_proj_with_mqa.weight"), 12);
  EXPECT_EQ(hf_layer_index("model.layers.61.eh_proj.weight"), 61);
  EXPECT_EQ(hf_layer_index("model.layers.0.input_layernorm.weight"), 0);
  EXPECT_EQ(hf_layer_index("model.embed_tokens.weight"), -1);
  EXPECT_EQ(hf_layer_index("lm_head.weight"), -1);
  EXPECT_EQ(hf_layer_index("model.layers.x.mlp.weight"), -1);
  EXPECT_EQ(hf_layer_index("model.layers.7"), -1);
}

// The tiny DeepSeek-V3 checkpoint has 4 layers; loaded as a 3-layer model, its last layer stands in for an MTP layer.
TEST(WeightStoreCheckpoint, SkipsLayersPastTheModelsDepth) {
  hal::Device* cpu = hal::Registry::global().find_device("cpu").value();
  auto full = SafetensorsCheckpoint::open_dir(test::data_path("oracle/deepseek_v3_tiny"));
  ASSERT_TRUE(full.ok()) << full.status().to_string();
  const MlaDims mla{4, 16, 16};
  auto all = WeightStore::from_checkpoint(std::move(full).value(), 4, *cpu, &mla);
  ASSERT_TRUE(all.ok()) << all.status().to_string();
  EXPECT_TRUE(all->has("blk.3.attn_norm.weight"));
  EXPECT_TRUE(all->has("blk.3.attn_k_b.weight") && all->has("blk.3.attn_v_b.weight"));  // kv_b_proj split at load
  EXPECT_FALSE(all->has("blk.3.attn_kv_b.weight"));
  auto no_dims = WeightStore::from_checkpoint(
      std::move(SafetensorsCheckpoint::open_dir(test::data_path("oracle/deepseek_v3_tiny"))).value(), 4, *cpu);
  ASSERT_FALSE(no_dims.ok());
  EXPECT_NE(no_dims.status().message().find("kv_b_proj"), std::string::npos) << no_dims.status().message();

  auto ckpt = SafetensorsCheckpoint::open_dir(test::data_path("oracle/deepseek_v3_tiny"));
  ASSERT_TRUE(ckpt.ok());
  auto ws = WeightStore::from_checkpoint(std::move(ckpt).value(), 3, *cpu, &mla);
  ASSERT_TRUE(ws.ok()) << ws.status().to_string();
  EXPECT_TRUE(ws->has("token_embd.weight"));
  EXPECT_TRUE(ws->has("blk.2.attn_norm.weight"));
  EXPECT_TRUE(ws->has("blk.2.ffn_gate_exps.weight"));
  EXPECT_FALSE(ws->has("blk.3.attn_norm.weight"));
  EXPECT_FALSE(ws->has("blk.3.ffn_gate_exps.weight"));
}

}  // namespace
}  // namespace cai
