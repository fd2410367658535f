// Architecture registry: HF architecture / GGUF general.architecture → model factory. The one place to add an arch.
#pragma once

#include <memory>

#include "model/model.h"
#include "model/weights.h"

namespace cai {

// kv_dtype: the element type of the model's KV cache (KvSpec::dtype).
using ModelFactory = Result<std::unique_ptr<Model>> (*)(const ModelConfig& cfg, WeightStore weights, DType kv_dtype);

struct ArchEntry {
  const char* hf_architecture;  // "Qwen2ForCausalLM"
  const char* model_type;       // HF model_type and GGUF general.architecture ("qwen2")
  ModelFactory factory;
};

// What one token costs in the KV cache of the model `cfg` describes (MLA: the latent [c_kv | k_rope]; GQA: K and V of
// every KV head): the factories build their cache from it, and load_model prices the cache before reading weights.
KvSpec kv_spec_for(const ModelConfig& cfg, DType kv_dtype);

// Matches cfg.architecture or cfg.model_type; unknown → unsupported, listing the known ones.
Result<const ArchEntry*> find_arch(const ModelConfig& cfg);

// Factories (one per architecture file).
Result<std::unique_ptr<Model>> make_llama_model(const ModelConfig& cfg, WeightStore weights, DType kv_dtype);
Result<std::unique_ptr<Model>> make_deepseek_model(const ModelConfig& cfg, WeightStore weights, DType kv_dtype);

}  // namespace cai
