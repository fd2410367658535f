// WeightStore: the model's tensors under one canonical (GGUF-style) naming, whatever file they came from.
#pragma once

#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "core/status.h"
#include "core/tensor_view.h"
#include "hal/hal.h"
#include "model/weight_placement.h"

namespace cai {

class GgufFile;
class MappedFile;
class SafetensorsCheckpoint;
struct MlaDims;
struct HostTensor;

// Canonical name of one layer's stacked routed experts [n_experts, out, in]: "blk.<layer>.ffn_<proj>_exps.weight".
std::string experts_name(int layer, const std::string& proj);
// HF parameter name → canonical name ("model.layers.3.mlp.up_proj.weight" → "blk.3.ffn_up.weight"), or nullopt.
std::optional<std::string> canonical_name_from_hf(const std::string& hf_name);
// The decoder layer an HF tensor belongs to ("model.layers.12.…" → 12), or -1 for tensors outside the layers. Layers
// at or past config.num_hidden_layers are DeepSeek's multi-token-prediction modules, which inference does not run.
int hf_layer_index(const std::string& hf_name);

class WeightStore {
 public:
  WeightStore();
  ~WeightStore();
  WeightStore(WeightStore&&) noexcept;
  WeightStore& operator=(WeightStore&&) noexcept;

  // mla: a DeepSeek model's head sizes, which split a joint attn_kv_b / kv_b_proj into the attn_k_b / attn_v_b the
  // model reads (loaders/mla_weights.h); null for other models. Each tensor goes to its device in `placement` only:
  // straight from the file to that device, so no device holds more than its share.
  static Result<WeightStore> from_gguf(std::unique_ptr<GgufFile> file, const WeightPlacement& placement,
                                       const MlaDims* mla = nullptr);
  // Loads the tensors of layers [0, n_layers) and those outside the layers; MTP layers past them are left unread.
  static Result<WeightStore> from_checkpoint(std::unique_ptr<SafetensorsCheckpoint> ckpt, int n_layers,
                                             const WeightPlacement& placement, const MlaDims* mla = nullptr);
  // The same with every tensor on one device.
  static Result<WeightStore> from_gguf(std::unique_ptr<GgufFile> file, hal::Device& device,
                                       const MlaDims* mla = nullptr);
  static Result<WeightStore> from_checkpoint(std::unique_ptr<SafetensorsCheckpoint> ckpt, int n_layers,
                                             hal::Device& device, const MlaDims* mla = nullptr);

  const WeightPlacement& placement() const { return placement_; }
  // A store for tensor-parallel rank `rank` of `n`, on `device`: its slice (tensor_shard.h) of each tensor `main` holds
  // for the ranks (placement tp > 1), as pairs (name in this store, name in main: a tied model's output.weight reads
  // token_embd.weight). token_embd.weight is copied whole. n_layers: the model's, for layer_device().
  // expert_parallel: routed experts (…_exps.) are not sliced; the rank takes experts [rank·E/n, (rank+1)·E/n) whole.
  static Result<WeightStore> for_rank(const WeightStore& main,
                                      const std::vector<std::pair<std::string, std::string>>& names, int rank, int n,
                                      bool expert_parallel, hal::Device& device, int n_layers);
  // Expert parallelism: this store holds part `expert_part()` of `expert_parts()` equal ranges of each MoE layer's
  // routed experts (1 part: all of them).
  int expert_parts() const { return expert_parts_; }
  int expert_part() const { return expert_part_; }
  // Whether this store holds this tensor for tensor-parallel ranks, and the names it holds that start with `prefix`.
  bool holds_for_ranks(const std::string& name) const { return held_.count(name) != 0; }
  std::vector<std::string> held_names(const std::string& prefix) const;
  // Once the ranks' stores hold their slices: forget the held tensors, freeing the host copies built at load
  // (DeepSeek's split kv_b) and this process's pages of the files, as after a one-device upload.
  void release_held();

  bool has(const std::string& name) const { return tensors_.count(name) != 0; }
  // The tensor with exactly this shape (PyTorch order), or an error naming it and both shapes.
  Result<TensorView> get(const std::string& name, std::initializer_list<int64_t> shape);
  // Same, for a weight only dense_gemm, sparse_moe and embed read: in the device's own layout where it has one
  // (hal::Device:: pack_gemm_weight: a packed copy made once, the file's pages of it dropped; `get` returns it from
  // then on). `grain`: how finely a fast path must keep the activations this weight multiplies (hal::ActivationGrain).
  Result<TensorView> get_gemm_weight(const std::string& name, std::initializer_list<int64_t> shape,
                                     hal::ActivationGrain grain = hal::ActivationGrain::kWeight);
  // false (--no-repack): get_gemm_weight returns the file's layout even where the device has its own.
  void set_repack(bool on) { repack_ = on; }
  // Same, converted to F32 once (norm weights, biases: small tensors the kernels read as floats). On a device the
  // host cannot address, the conversion runs on the host and the result is uploaded.
  Result<TensorView> get_f32(const std::string& name, std::initializer_list<int64_t> shape);
  // A table the model derives from its config (e.g. RoPE inverse frequencies), uploaded to `device` once under `name`;
  // asking again for the same name and device returns the first upload.
  Result<TensorView> upload_f32(const std::string& name, const std::vector<float>& values, hal::Device& device);
  const std::map<std::string, TensorView>& all() const { return tensors_; }
  size_t total_bytes() const;
  // Bytes of the (non-alias) tensors whose canonical name contains `substring`.
  size_t bytes_matching(const std::string& substring) const;
  // Bytes of the tensors on `device`.
  size_t bytes_on(const hal::Device& device) const;
  // --mlock: lock every tensor's pages in RAM where the device reads the weights from host memory (a device with its
  // own memory holds its copy already). The error names RLIMIT_MEMLOCK.
  Status lock_in_memory() const;
  // The RLIMIT_MEMLOCK check of lock_in_memory on its own: --mlock runs it before the model is built (packed copies
  // take as many bytes as the file's tensors they replace), so a low limit is refused before any weight is repacked.
  Status check_lock_limit() const;
  // Touch every page of the tensors whose canonical name contains `substring` (e.g. "_exps.") so the first request
  // does not fault them in from disk. Returns the bytes touched.
  size_t prewarm(const std::string& substring) const;

 private:
  // Where a device cannot address host memory the files are read once, in order, into the arenas: `copying`
  // true asks the kernel to read ahead; false (after the copy) drops our pages of them, which the devices now hold.
  void advise_copy(const std::vector<const MappedFile*>& files, bool copying) const;
  // Bytes of the tensors on devices that read host memory (the CPU): what --mlock locks.
  size_t host_resident_bytes() const;
  // Reserves one allocation per device for the bytes of weights placed there (only on devices that cannot address
  // host memory); `bytes` by device.
  Status reserve_arenas(const std::map<hal::Device*, size_t>& bytes);
  // The tensor on its device: the host view itself where the device sees host memory, else a copy in its arena.
  Result<TensorView> place(const std::string& name, const TensorView& host_view);
  // A copy of host data on `device` (conversions, derived tables, stacked experts), owned by the store.
  Result<TensorView> upload(const TensorView& host_view, hal::Device& device);
  // The same for a tensor built on the host at load, with its FP8 block scales where it has them, on its device.
  Result<TensorView> upload(const HostTensor& t);
  Status attach_block_scales(
      const SafetensorsCheckpoint& ckpt);  // in place if the device sees host memory, else upload
  // Hugging Face checkpoints keep one tensor per expert: stack each layer's experts into [E, out, in] (with FP8 block
  // scales stacked alike), as GGUF stores them, so every device can run them as one grouped GEMM.
  Status stack_experts(const SafetensorsCheckpoint& ckpt,
                       const std::map<std::string, std::vector<std::string>>& groups);

  // Keeps the host bytes of a tensor the ranks of a tensor-parallel stage slice (experts as one view each).
  void hold_for_ranks(const std::string& name, const TensorView& host);
  void hold_for_ranks(const std::string& name, HostTensor t);

  struct Held {
    TensorView whole;               // the tensor's shape (and, for one view, its bytes)
    std::vector<TensorView> slabs;  // what shard_tensor slices: one view, or one per expert
  };

  struct Arena {
    hal::Buffer buffer;  // the file's tensors on a device that cannot address host memory, back to back
    size_t used = 0;
  };

  WeightPlacement placement_;
  bool repack_ = true;
  int expert_parts_ = 1, expert_part_ = 0;
  std::map<std::string, TensorView> tensors_;
  std::unique_ptr<GgufFile> gguf_;
  std::unique_ptr<SafetensorsCheckpoint> ckpt_;
  // Where the device cannot address host memory: each file tensor's host view, the source of get_f32 conversions.
  std::map<std::string, TensorView> host_views_;
  std::map<hal::Device*, Arena> arenas_;
  std::vector<hal::Buffer> owned_;  // converted, derived or stacked copies
  std::map<std::string, TensorView> f32_cache_;
  std::map<std::string, Held> held_;    // placement tp > 1: the tensors the ranks' stores slice
  std::vector<HostTensor> host_owned_;  // host tensors built at load that `held_` or `host_views_` point into
};

}  // namespace cai
