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

Result<const ArchEntry*> find_arch(const ModelConfig& cfg) {
  for (const ArchEntry& e : kArchs)
    if (cfg.architecture == e.hf_architecture || cfg.model_type == e.model_type) return &e;
  std::string known;
  for (const ArchEntry& e : kArchs) known += fmt::format("{}{} ({})", known.empty() ? "" : ", ", e.hf_architecture, e.model_type);
  return unsupported("unknown architecture '{}' (model_type '{}'); supported: {}", cfg.architecture, cfg.model_type, known);
}

}  // namespace cai
