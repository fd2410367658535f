// load_model: a .gguf file or a Hugging Face directory → Model + Tokenizer (+ chat template), on one device.
#pragma once

#include <memory>
#include <optional>
#include <string>

#include "model/model.h"
#include "tokenizer/tokenizer.h"

namespace cai {

struct LoadedModel {
  std::unique_ptr<Model> model;
  std::unique_ptr<Tokenizer> tokenizer;  // null when the checkpoint has none (e.g. test oracles)
  std::string source;                    // path it came from
  std::string format;                    // "gguf" or "hf"
  double load_seconds = 0;
  double prewarm_seconds = 0;
};

struct LoadOptions {
  bool prewarm_experts = false;  // touch every expert page at load (see Model::prewarm_experts)
  std::optional<DType> kv_dtype;  // KV cache element type (F32, BF16 or F16); unset = default_kv_dtype(device)
};

Result<LoadedModel> load_model(const std::string& path, hal::Device& device, const LoadOptions& options = {});

}  // namespace cai
