// ModelConfig: hyper-parameters under their Hugging Face names, read from config.json or GGUF metadata.
#pragma once

#include <nlohmann/json.hpp>

#include <string>
#include <vector>

#include "core/status.h"
#include "hal/op_table.h"
#include "model/rope_freqs.h"

namespace cai {

struct ModelConfig {
  std::string architecture;  // HF class name, e.g. "Qwen2ForCausalLM"; GGUF files map to one
  std::string model_type;    // "llama", "qwen2", "deepseek_v3"
  int hidden_size = 0;
  int num_hidden_layers = 0;
  int num_attention_heads = 0;
  int num_key_value_heads = 0;
  int head_dim = 0;
  int intermediate_size = 0;
  int vocab_size = 0;
  int max_position_embeddings = 0;
  float rms_norm_eps = 1e-6f;
  bool attention_bias = false;  // q/k/v biases (always on for qwen2)
  bool tie_word_embeddings = false;

  // RoPE: style depends on the weight layout (GGUF llama rows are permuted to interleaved pairs; HF is half-split).
  float rope_theta = 10000.0f;
  int rope_dim = 0;  // rotated dims per head (default head_dim)
  int32_t rope_style = hal::RopeStyle::kNeox;
  std::vector<float> rope_freq_divisors;  // Llama-3 / linear scaling, one per pair; empty = none
  float yarn_factor = 1.0f;
  int yarn_original_max_position_embeddings = 0;
  float yarn_beta_fast = 32.0f;
  float yarn_beta_slow = 1.0f;

  // Multi-head Latent Attention (DeepSeek V2/V3/R1); kv_lora_rank == 0 means plain GQA.
  int q_lora_rank = 0;  // 0 = q_proj directly (V2-Lite)
  int kv_lora_rank = 0;
  int qk_nope_head_dim = 0;
  int qk_rope_head_dim = 0;
  int v_head_dim = 0;
  float yarn_mscale = 1.0f;          // rope_scaling.mscale
  float yarn_mscale_all_dim = 0.0f;  // rope_scaling.mscale_all_dim

  // Mixture of experts; n_routed_experts == 0 means every layer is dense.
  int first_k_dense_replace = 0;
  int moe_intermediate_size = 0;
  int n_routed_experts = 0;
  int n_shared_experts = 0;
  int num_experts_per_tok = 0;
  int n_group = 1;
  int topk_group = 1;
  bool norm_topk_prob = false;
  float routed_scaling_factor = 1.0f;
  std::string scoring_func = "softmax";  // or "sigmoid" (V3/R1)
  // DeepSeek-V3/R1 multi-token prediction: modules stored after the decoder layers (layer num_hidden_layers; in a
  // GGUF the last block_count - num_hidden_layers blocks, with blk.L.nextn.* tensors). 0 when the file has none.
  int n_mtp_layers = 0;

  // What the `rope` op needs besides its frequency table (style, rotated dims) ...
  hal::RopeParams rope_params() const;
  // ... and how that table is computed (rope_inv_freqs); layers build it at load and own it on the device.
  RopeFreqConfig rope_freq_config() const;
  bool is_mla() const { return kv_lora_rank > 0; }
};

// YaRN magnitude factor get_m(s, k) = 0.1 k ln s + 1 (1 when s <= 1). docs/design/formats.md#yarn.
float yarn_get_mscale(float factor, float k);

// From a Hugging Face config.json object (llama and qwen2 families). Missing required fields name the field.
Result<ModelConfig> config_from_hf(const nlohmann::json& cfg);
// From GGUF metadata (keys `<arch>.*`); the caller adds rope_freqs.weight divisors if the file has that tensor.
Result<ModelConfig> config_from_gguf(const nlohmann::json& metadata);
// Llama-3 rope_scaling → per-pair divisors (docs/design/formats.md#llama-3-frequency-scaling).
std::vector<float> llama3_rope_divisors(int rope_dim, float theta, float factor, float low_freq_factor,
                                        float high_freq_factor, int original_ctx);

}  // namespace cai
