// Writing a ModelSpec to disk: a GGUF file, or a Hugging Face directory (config, safetensors, tokenizer files).
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "core/dtype.h"
#include "core/status.h"
#include "core/thread_pool.h"
#include "model_spec.h"
#include "vocab.h"

namespace cai::mkmodel {

struct EmitOptions {
  DType dtype = DType::kF32;     // requested weight type (GGUF: the matrices; HF: see HfRole)
  std::string name;              // general.name
  uint64_t max_shard_bytes = 0;  // HF: 0 = one model.safetensors, else shards + index
  ThreadPool* pool = nullptr;    // generates and quantizes rows in parallel
};

struct EmitStats {
  int64_t n_tensors = 0;
  uint64_t n_bytes = 0;  // tensor data bytes written
};

// The type a GGUF tensor of `role` gets when `requested` is asked for and its rows hold `cols` elements.
DType gguf_tensor_dtype(GgufRole role, DType requested, int64_t cols);
// general.file_type for a requested type (docs/design/formats.md#gguf-type-ids; q4_K/q5_K are the _M mixes).
uint32_t gguf_file_type(DType requested);

// A GGUF file: general.alignment/name/file_type, then `metadata` (architecture and tokenizer keys), then the tensors,
// each generated row by row and encoded in the type gguf_tensor_dtype picks.
Result<EmitStats> write_gguf_file(const std::vector<GgufTensorSpec>& tensors,
                                  const std::function<void(GgufWriter&)>& metadata, const EmitOptions& o,
                                  const std::string& path);
// The random model as GGUF, with the synthetic vocabulary as its tokenizer.
Result<EmitStats> write_gguf(const ModelSpec& m, const SyntheticVocab& v, const EmitOptions& o,
                             const std::string& path);
// Creates `dir` if needed. Weight types: F32, F16, BF16, or F8_E4M3 (DeepSeek FP8: projections with 128×128 block
// scales `<name>_scale_inv`, everything else BF16, and the official quantization_config in config.json).
Result<EmitStats> write_hf(const ModelSpec& m, const SyntheticVocab& v, const EmitOptions& o, const std::string& dir);

}  // namespace cai::mkmodel
