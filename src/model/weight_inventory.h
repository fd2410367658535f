// WeightInventory: every tensor an architecture reads (canonical name, PyTorch shape, kind), from its config alone.
// It states the shapes the layer loaders (src/model/layers/*.cpp) ask WeightStore for, so a planner can size a model
// that is only a config.json; tests/chips/weight_inventory_test.cpp holds it to the tensors of real files.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "model/config.h"

namespace cai {

enum class WeightKind {
  kLinear,     // a projection matrix [out, in] (stacked experts [E, out, in]); FP8 + block scales in DeepSeek files
  kEmbedding,  // token_embd / output (the LM head)
  kRouter,     // MoE gate [E, hidden]
  kVector,     // norms and biases
  kF32Vector,  // e_score_correction_bias: F32 in every DeepSeek checkpoint
};

struct WeightEntry {
  std::string name;            // canonical (GGUF-style) name, e.g. "blk.3.ffn_up_exps.weight"
  std::vector<int64_t> shape;  // PyTorch order, outermost first
  WeightKind kind = WeightKind::kLinear;
  int layer = -1;  // block index, -1 for embeddings, final norm and head
  int64_t n_elements() const;
};

// The tensors of the model `cfg` describes, layer by layer, then the embeddings, final norm and head (the head is
// absent when tie_word_embeddings). Routed experts appear stacked, one entry per projection and layer.
std::vector<WeightEntry> weight_inventory(const ModelConfig& cfg);

}  // namespace cai
