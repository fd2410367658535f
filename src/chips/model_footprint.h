// ModelFootprint: what a model costs in memory, per layer and role, read from file headers and configs only (GGUF
// metadata + tensor infos, safetensors JSON headers, config.json, presets) so the 671B R1 sizes in milliseconds.
#pragma once

#include <nlohmann/json.hpp>

#include <cstddef>
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "core/status.h"
#include "model/config.h"

namespace cai::chips {

// Bytes (with FP8 block scales) and parameters (weight elements, scales excluded) of one part of the model.
struct PartSize {
  size_t bytes = 0;
  int64_t params = 0;
  void add(size_t b, int64_t p) { bytes += b, params += p; }
};

struct LayerFootprint {
  PartSize attention;  // projections, norms (attn_*)
  PartSize ffn;        // dense MLP, or router + correction bias + shared experts; ffn_norm
  PartSize experts;    // every routed expert of the layer (stacked or one tensor per expert)
};

struct ModelFootprint {
  std::string source;  // what -m named
  std::string format;  // "gguf", "hf" (safetensors headers), "config" (config.json + dtype rules), "preset"
  ModelConfig config;
  std::vector<LayerFootprint> layers;  // num_hidden_layers entries
  PartSize embedding;                  // token_embd
  PartSize output;                     // the LM head; empty when tied to the embeddings
  PartSize other;                      // final norm, rope_freqs, anything else the model reads outside the blocks
  std::map<std::string, size_t> bytes_by_dtype;  // "f8_e4m3" → bytes, as stored
  bool fp8_weights = false;                      // F8_E4M3 weights with block scales
  size_t skipped_bytes = 0;  // tensors the model does not read (MTP layers at index >= num_hidden_layers, ...)

  size_t weight_bytes() const;
  int64_t params() const;
  // Bytes of one routed expert of one layer (all its projections), 0 for dense models.
  size_t expert_bytes(int layer) const;
};

// MODEL: a .gguf file, a Hugging Face directory (config.json + *.safetensors headers; config only if it has no
// weights), a bare config.json, or "preset:NAME" (data/presets/NAME.json). Errors name the path and the problem.
Result<ModelFootprint> load_footprint(const std::string& model);
// From config.json values alone: weight dtypes from torch_dtype and quantization_config (fp8 → F8_E4M3 linear weights
// with F32 scale_inv blocks, the rest torch_dtype; e_score_correction_bias F32), shapes from weight_inventory.
Result<ModelFootprint> footprint_from_config(const nlohmann::json& config_json, const std::string& source,
                                             const std::string& format);

// $CAI_PRESETS_DIR, else <exe dir>/../share/cai/presets, else the source tree's data/presets.
std::string default_preset_dir();
std::vector<std::string> list_presets(const std::string& dir);  // sorted names, without ".json"

// F32 workspace bytes one token costs in a forward step: the buffers the layers name (x/h/y, q/k/v or the MLA latent
// path and the absorbed query, the MLP or routed/shared expert intermediates, router logits). Logits are extra.
size_t activation_bytes_per_token(const ModelConfig& cfg);
// F32 bytes per sequence that wants logits: the selected hidden rows and the [vocab] logits row.
size_t logits_bytes_per_row(const ModelConfig& cfg);

}  // namespace cai::chips
