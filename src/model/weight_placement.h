// Layout (how the user spreads a model over devices: pipeline stages, tensor-parallel ranks within each stage, the
// routed experts' device) and WeightPlacement (the device of each of the model's tensors, resolved for one model).
#pragma once

#include <string_view>
#include <vector>

#include "core/status.h"
#include "hal/hal.h"

namespace cai {

// The part of a `cai plan` layout one process runs: pipeline stages in device-list order, each `tp` devices wide.
struct Layout {
  std::vector<hal::Device*> devices;  // stage s runs on devices [s·tp, (s+1)·tp), rank r on the r-th of them
  int tp = 1;
  // The stage's ranks split each MoE layer's routed experts between them whole (expert parallel), instead of
  // slicing every expert's columns; attention, dense MLPs and shared experts stay tensor parallel over the same ranks.
  bool expert_parallel = false;
  std::vector<int> layer_split;  // layers per stage; empty: as even as possible, earlier stages one more
  // Where each pipeline stage's MoE layers keep and run their routed experts (--moe-device: the same device for every
  // stage in one process; in an MPI job each stage's process's own CPU); empty: their layer's device.
  std::vector<hal::Device*> moe_devices;
};

// The block a canonical tensor name belongs to ("blk.3.ffn_up.weight" → 3), or -1 for names outside the blocks.
int block_index(std::string_view canonical_name);

// Layer l runs on the ranks of stage layer_stage[l]. With one rank per stage its attention, norms, router, dense MLP
// and shared experts live on that rank's device and its routed experts on experts[l]; the token embedding on `embed`,
// the final norm and output head on the last stage. With several ranks per stage (tp > 1) the ranks hold slices of
// them instead (tensor_shard.h), built from the file's bytes by each rank's own store.
struct WeightPlacement {
  int tp = 1;
  bool expert_parallel = false;                   // see Layout
  std::vector<std::vector<hal::Device*>> stages;  // each stage's ranks
  std::vector<int> layer_stage;                   // [n_layers]
  std::vector<hal::Device*> experts;              // [n_layers]
  hal::Device* embed = nullptr;
  int mtp_layers = 0;  // multi-token-prediction modules past the layers to load (with the head)

  // Everything on one device.
  static WeightPlacement single(hal::Device& device, int n_layers);
  // Stage s takes the next layer_split[s] layers. A tied embedding (no output.weight) stays with the head, which
  // reads it too (one rank per stage); the first stage then gets the looked-up rows from there. Errors name the
  // numbers: a device count that is not a multiple of tp, a split whose size is not the stage count, a stage with no
  // layer, a sum that is not n_layers, more stages than layers, --moe-device with tp > 1.
  static Result<WeightPlacement> from_layout(const Layout& layout, int n_layers, bool tied_embeddings);

  // The device of the tensor with this canonical name ("blk.3.ffn_up_exps.weight" → experts[3]); null with tp > 1,
  // where the ranks' stores hold it. Tensors of layers past layer_stage (DeepSeek's MTP modules in a GGUF) go with
  // the head.
  hal::Device* device_for(std::string_view canonical_name) const;
  // Whether a store loads this tensor: not one of a layer past the layers and the MTP modules asked for (a placement
  // without layers loads every tensor).
  bool loads(std::string_view canonical_name) const;
  // Rank 0's device of layer l's stage, and all of the stage's ranks (an MTP module past the layers: the head's).
  hal::Device& layer_device(int layer) const { return *layer_ranks(layer).front(); }
  const std::vector<hal::Device*>& layer_ranks(int layer) const;
  hal::Device& head() const { return *stages.back().front(); }
  // Every device used, each once: the embedding's first, then in layer order, then the head's.
  std::vector<hal::Device*> devices() const;
  bool single_device() const { return devices().size() == 1; }
};

}  // namespace cai
