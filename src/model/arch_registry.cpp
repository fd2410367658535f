// The table of known architectures.
#include "model/arch_registry.h"

#include <array>

namespace cai {

namespace {

constexpr std::array<ArchEntry, 5> kArchs = {{
    {"LlamaForCausalLM", "llama", make_llama_model},
    {"Qwen2ForCausalLM", "qwen2", make_llama_model},
    {"DeepseekV3ForCausalLM", "deepseek_v3", make_deepseek_model},
    {"DeepseekV2ForCausalLM", "deepseek_v2", make_deepseek_model},
    {"DeepseekV3ForCausalLM", "deepseek2", make_deepseek_model},  // GGUF general.architecture
}};

}  // namespace

KvSpec kv_spec_for(const ModelConfig& cfg, DType kv_dtype) {
  if (cfg.is_mla())
    return KvSpec{cfg.num_hidden_layers,
                  cfg.kv_lora_rank + cfg.qk_rope_head_dim,
                  0,
                  kv_dtype,
                  {{"kv_lora_rank", cfg.kv_lora_rank}, {"qk_rope_head_dim", cfg.qk_rope_head_dim}}};
  const int kv_width = cfg.num_key_value_heads * cfg.head_dim;
  return KvSpec{cfg.num_hidden_layers, kv_width, kv_width, kv_dtype, {{"head_dim", cfg.head_dim}}};
}

Result<const ArchEntry*> find_arch(const ModelConfig& cfg) {
  for (const ArchEntry& e : kArchs)
    if (cfg.architecture == e.hf_architecture || cfg.model_type == e.model_type) return &e;
  std::string known;
  for (const ArchEntry& e : kArchs)
    known += fmt::format("{}{} ({})", known.empty() ? "" : ", ", e.hf_architecture, e.model_type);
  return unsupported("unknown architecture '{}' (model_type '{}'); supported: {}", cfg.architecture, cfg.model_type,
                     known);
}

}  // namespace cai
