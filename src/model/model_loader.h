// load_model: a .gguf file or a Hugging Face directory → Model + Tokenizer (+ chat template), on one device.
#pragma once

#include <memory>
#include <optional>
#include <string>

#include "model/model.h"
#include "model/weight_placement.h"
#include "tokenizer/tokenizer.h"

namespace cai {

struct LoadedModel {
  std::unique_ptr<Model> model;
  std::unique_ptr<Tokenizer> tokenizer;  // null when the checkpoint has none (e.g. test oracles)
  std::string source;                    // path it came from
  std::string format;                    // "gguf" or "hf"
  double load_seconds = 0;
  double prewarm_seconds = 0;
  size_t rss_after_load_bytes = 0;  // this process's resident set once loaded (and pre-warmed)
};

struct LoadOptions {
  bool prewarm_experts = false;   // touch every expert page at load (see Model::prewarm_experts)
  std::optional<DType> kv_dtype;  // KV cache element type (F32, BF16, F16; Q8_0 on the CPU); unset: default_kv_dtype
  bool mlock = false;  // lock the weights in RAM where the device reads them from host memory (see WeightStore)
  // The KV cache the caller will allocate once loaded: kv_tokens slots priced by the model's KvSpec (kModelContext: its
  // whole context) plus kv_bytes. Before any weight is read, load_model checks that the weights and this cache fit
  // the device's available memory (the host's MemAvailable on the CPU) and fails naming both numbers if not.
  static constexpr int64_t kModelContext = -1;
  int64_t kv_tokens = 0;
  size_t kv_bytes = 0;
  // Weights in the device's own layout where it has one (WeightStore::get_gemm_weight); false keeps the file's.
  bool repack = true;
  // Load DeepSeek-V3/R1's multi-token-prediction module (Model::mtp()) on the head's device; an error when the file
  // has none. Otherwise its weights are left unread.
  bool mtp = false;
};

class GgufFile;
// A GGUF's config counts the MTP modules in block_count where the file keeps them as its last blocks (blk.L.nextn.*);
// converters that drop the modules may still record their count. This makes num_hidden_layers the decoder layers and
// n_mtp_layers the modules the file holds.
void exclude_mtp_blocks(ModelConfig& cfg, const GgufFile& file);

Result<LoadedModel> load_model(const std::string& path, hal::Device& device, const LoadOptions& options = {});
// The same over several devices: each stage's layers (and the routed experts, on layout.moe_devices where set) are
// loaded straight to their device, and each device must hold its share (the error names the device and the bytes).
// The KV dtype defaults to the devices' common default, BF16 where they differ; every stage must take it.
Result<LoadedModel> load_model(const std::string& path, const Layout& layout, const LoadOptions& options = {});

}  // namespace cai
