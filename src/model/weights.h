// WeightStore: the model's tensors under one canonical (GGUF-style) naming, whatever file they came from.
#pragma once

#include <map>
#include <set>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "core/status.h"
#include "core/tensor_view.h"
#include "hal/hal.h"

namespace cai {

class GgufFile;
class SafetensorsCheckpoint;

// Canonical name of one routed expert's projection: "blk.<layer>.ffn_<proj>_exps.<expert>.weight".
std::string expert_name(int layer, const std::string& proj, int expert);
// HF parameter name → canonical name ("model.layers.3.mlp.up_proj.weight" → "blk.3.ffn_up.weight"), or nullopt.
std::optional<std::string> canonical_name_from_hf(const std::string& hf_name);

class WeightStore {
 public:
  WeightStore();
  ~WeightStore();
  WeightStore(WeightStore&&) noexcept;
  WeightStore& operator=(WeightStore&&) noexcept;

  static Result<WeightStore> from_gguf(std::unique_ptr<GgufFile> file, hal::Device& device);
  static Result<WeightStore> from_checkpoint(std::unique_ptr<SafetensorsCheckpoint> ckpt, hal::Device& device);

  bool has(const std::string& name) const { return tensors_.count(name) != 0; }
  // The tensor with exactly this shape (PyTorch order), or an error naming it and both shapes.
  Result<TensorView> get(const std::string& name, std::initializer_list<int64_t> shape);
  // Same, converted to F32 once (norm weights, biases: small tensors the kernels read as floats).
  Result<TensorView> get_f32(const std::string& name, std::initializer_list<int64_t> shape);
  const std::map<std::string, TensorView>& all() const { return tensors_; }
  size_t total_bytes() const;
  // Bytes of the (non-alias) tensors whose canonical name contains `substring`.
  size_t bytes_matching(const std::string& substring) const;
  // Touch every page of the tensors whose canonical name contains `substring` (e.g. "_exps.") so the first request
  // does not fault them in from disk. Returns the bytes touched.
  size_t prewarm(const std::string& substring) const;

 private:
  Result<TensorView> place(const TensorView& host_view);
  Status attach_block_scales(const SafetensorsCheckpoint& ckpt);  // in place if the device sees host memory, else upload

  hal::Device* device_ = nullptr;
  std::map<std::string, TensorView> tensors_;
  std::unique_ptr<GgufFile> gguf_;
  std::unique_ptr<SafetensorsCheckpoint> ckpt_;
  std::vector<hal::Buffer> owned_;  // converted or uploaded copies
  std::map<std::string, TensorView> f32_cache_;
  std::set<std::string> aliases_;  // views into other tensors (per-expert slices of stacked GGUF experts)
};

}  // namespace cai
