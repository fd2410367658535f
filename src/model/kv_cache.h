// KvSpec (what one token costs per layer) and KvCache (per-layer paged K/V storage on the device).
#pragma once

#include <memory>
#include <string_view>
#include <vector>

#include "core/status.h"
#include "core/tensor_view.h"
#include "hal/hal.h"
#include "model/kv_host_tier.h"

namespace cai {

// A vector the attention kernels read from a cache row on their own (one GQA head, MLA's c_kv or k_rope), named as
// the model config names its width.
struct KvPart {
  std::string_view name;
  int width = 0;
};

// Per layer and token: k_width elements of keys and v_width of values, of `dtype` (F32, F16, BF16 or Q8_0; GQA:
// n_kv_head × head_dim each; MLA: the latent c_kv + k_rope in k, nothing in v). The runtime only ever sees this.
struct KvSpec {
  int n_layers = 0;
  int k_width = 0;
  int v_width = 0;
  DType dtype = DType::kF32;
  std::vector<KvPart> parts;  // a block dtype (Q8_0: 32 elements) needs each part to be whole blocks
  // Every layer's K and V row in `dtype`: Q8_0 costs 34 bytes per 32 elements.
  size_t bytes_per_token() const {
    return static_cast<size_t>(n_layers) * (row_bytes(dtype, k_width) + row_bytes(dtype, v_width));
  }
};

// The KV cache dtype a device gets unless told otherwise: F32 where the host addresses its memory (CPU), BF16 on
// devices with their own memory (half the bytes per token).
DType default_kv_dtype(const hal::Device& device);
// A --kv-dtype value: "f32", "bf16", "f16" or "q8_0"; anything else is invalid_argument listing those.
Result<DType> parse_kv_dtype(std::string_view name);

// The host KV tier a cache gets: the K/V of the last n_layers layers in host memory (KvHostTier), sized for steps of
// at most max_step_tokens tokens. 0 layers: every layer on the device.
struct KvHostLayers {
  int n_layers = 0;
  int max_step_tokens = 0;
};

// Where one tensor-parallel rank keeps a layer's cache, and the widths of its K and V rows there (GQA: its share of
// the KV heads; MLA: the whole latent on every rank).
struct KvShard {
  hal::Device* device = nullptr;
  int k_width = 0, v_width = 0;
};

class KvCache {
 public:
  // n_blocks blocks of block_size token slots, for every layer. Errors: a dtype the device has no KV kernels for
  // (unsupported), parts that are not whole blocks of a block dtype (invalid_argument naming the part), host layers
  // asked of a device whose memory the host addresses (invalid_argument: there is nothing to offload to).
  static Result<KvCache> create(hal::Device& device, const KvSpec& spec, int n_blocks, int block_size,
                                KvHostLayers host = {});
  // The same with layer l's cache in the shards layers[l] (a model over pipeline stages and tensor-parallel ranks:
  // Model::kv_shards()); spec prices a token over all of them. Host layers need every layer in one shard on one
  // device.
  static Result<KvCache> create(const std::vector<std::vector<KvShard>>& layers, const KvSpec& spec, int n_blocks,
                                int block_size, KvHostLayers host = {});

  const KvSpec& spec() const { return spec_; }
  int n_blocks() const { return n_blocks_; }
  int block_size() const { return block_size_; }
  int n_slots() const { return n_blocks_ * block_size_; }
  // [n_slots, k_width] / [n_slots, v_width] device views of layer l's shard `rank` (a host layer's: the staging layer).
  TensorView k(int layer, int rank = 0) const;
  TensorView v(int layer, int rank = 0) const;
  size_t total_bytes() const;  // device memory, the host tier's staging included
  // The host tier, or null when every layer lives on the device.
  KvHostTier* host_tier() const { return host_.get(); }

 private:
  KvSpec spec_;
  int n_blocks_ = 0;
  int block_size_ = 0;
  std::vector<hal::Buffer> buffers_;
  std::vector<std::vector<TensorView>> k_, v_;  // [layer][rank]
  std::unique_ptr<KvHostTier> host_;
};

// One K or V part of a cache layer: a [n_slots, width] view of `dtype` on `device` (zeroed where the host addresses
// it), whose buffer is appended to `buffers`; width 0 allocates nothing.
Result<TensorView> allocate_kv_rows(hal::Device& device, DType dtype, int64_t n_slots, int64_t width,
                                    std::vector<hal::Buffer>& buffers);

// The simplest block table: one sequence owning blocks 0, 1, 2, ... (CLI runs, eval, bench).
std::vector<int32_t> identity_block_table(int n_blocks);

}  // namespace cai
