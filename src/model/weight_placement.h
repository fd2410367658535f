// Layout (how the user spreads a model over devices: pipeline stages, the routed experts' device) and
// WeightPlacement (the device of each of the model's tensors, resolved from a layout for one model).
#pragma once

#include <string_view>
#include <vector>

#include "core/status.h"
#include "hal/hal.h"

namespace cai {

// The part of a `cai plan` layout one process runs: pipeline stages on the devices in order, one device per stage.
struct Layout {
  std::vector<hal::Device*> stages;   // stage s runs on stages[s]
  std::vector<int> layer_split;       // layers per stage; empty: as even as possible, earlier stages one more
  hal::Device* moe_device = nullptr;  // where every MoE layer's routed experts live and run; null: their layer's
};

// Layer l's attention, norms, router, dense MLP and shared experts live on layers[l], its routed experts on
// experts[l]; the token embedding on `embed`, the final norm and the output head on `head`. Tensors of layers past
// `layers` (DeepSeek's MTP modules in a GGUF) go with the head.
struct WeightPlacement {
  std::vector<hal::Device*> layers, experts;  // [n_layers]
  hal::Device* embed = nullptr;
  hal::Device* head = nullptr;

  // Everything on one device.
  static WeightPlacement single(hal::Device& device, int n_layers);
  // Stage s takes the next layer_split[s] layers. A tied embedding (no output.weight) stays with the head, which
  // reads it too; the first stage then gets the looked-up rows from there. Errors name the numbers: a split whose
  // size is not the stage count, a stage with no layer, a sum that is not n_layers, more stages than layers.
  static Result<WeightPlacement> from_layout(const Layout& layout, int n_layers, bool tied_embeddings);

  // The device of the tensor with this canonical name ("blk.3.ffn_up_exps.weight" → experts[3]).
  hal::Device& device_for(std::string_view canonical_name) const;
  hal::Device& layer_device(int layer) const;
  // Every device used, each once: the embedding's first, then in layer order, then the head's.
  std::vector<hal::Device*> devices() const;
  bool single_device() const { return devices().size() == 1; }
};

}  // namespace cai
