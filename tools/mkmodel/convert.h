// Hugging Face checkpoint → GGUF: llama (Q/K rows permuted), qwen2, deepseek_v3 / deepseek_v2 (FP8 included).
#pragma once

#include <nlohmann/json.hpp>

#include <functional>
#include <string>

#include "core/status.h"
#include "emit.h"
#include "model/config.h"
#include "model_spec.h"

namespace cai::mkmodel {

struct ConvertStats {
  EmitStats emit;
  std::string arch;            // GGUF general.architecture
  int64_t n_dropped = 0;       // HF tensors not carried over (MTP layers, rotary caches, unknown names)
  bool has_tokenizer = false;  // tokenizer.ggml.* written from tokenizer.json
  std::string tokenizer_note;  // why the tokenizer was not converted, when it was not
};

// The GGUF architecture and hyper-parameters of a parsed config.json (`cfg` parsed from `raw`).
Result<ModelShape> shape_from_hf_config(const ModelConfig& cfg, const nlohmann::json& raw);

// Converts the checkpoint in `dir` (config.json, *.safetensors, optional tokenizer files) into the GGUF file `path`.
// Weights are read one row at a time (FP8 rows through their block scales) and encoded as o.dtype.
Result<ConvertStats> convert_hf_to_gguf(const std::string& dir, const EmitOptions& o, const std::string& path);

// tokenizer.ggml.* keys from `dir`/tokenizer.json (+ tokenizer_config.json) when it holds a byte-level BPE model;
// `default_pre` names the pre-tokenizer when its regex is not one this tool recognises. Tokens are padded with
// "[PAD<id>]" up to n_vocab. Returns unsupported (with the reason) for other tokenizer kinds.
Result<std::function<void(GgufWriter&)>> gguf_tokenizer_from_hf(const std::string& dir, const std::string& default_pre,
                                                                int64_t n_vocab);

}  // namespace cai::mkmodel
