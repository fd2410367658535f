// KvSpec (what one token costs per layer) and KvCache (per-layer paged K/V storage on the device).
#pragma once

#include <memory>
#include <string>
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

// The host KV tier a cache gets: the K/V of n_layers layers in host memory (host_kv_layers says which), sized for
// steps of at most max_step_tokens tokens. 0 layers: every layer on the devices.
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

// The layers whose cache a host tier of n layers takes. The pipeline stages (runs of consecutive layers on the same
// devices) whose devices have memory of their own share the n layers in proportion to their layer counts, each stage
// giving its last layers; on one device, the model's last n layers. Errors: n outside [0, layers], or above the
// layers such stages hold (every layer on the CPU: none).
Result<std::vector<int>> host_kv_layers(const std::vector<std::vector<KvShard>>& layers, int n);

// What the host tiers hold and have moved.
struct KvHostTraffic {
  size_t host_bytes = 0;                  // the host layers' K and V, over every device's tier
  uint64_t uploaded = 0, downloaded = 0;  // bytes copied host → device and device → host so far
};

class KvCache {
 public:
  // n_blocks blocks of block_size token slots, for every layer. Errors: a dtype the device has no KV kernels for
  // (unsupported), parts that are not whole blocks of a block dtype (invalid_argument naming the part), host layers
  // asked of a device whose memory the host addresses (invalid_argument: there is nothing to offload to).
  static Result<KvCache> create(hal::Device& device, const KvSpec& spec, int n_blocks, int block_size,
                                KvHostLayers host = {});
  // The same with layer l's cache in the shards layers[l] (a model over pipeline stages and tensor-parallel ranks:
  // Model::kv_shards()); spec prices a token over all of them. Each device that keeps shards of host layers gets a
  // tier of its own; a device of another process keeps its stand-in layers (its process holds the tier).
  static Result<KvCache> create(const std::vector<std::vector<KvShard>>& layers, const KvSpec& spec, int n_blocks,
                                int block_size, KvHostLayers host = {});

  const KvSpec& spec() const { return spec_; }
  int n_blocks() const { return n_blocks_; }
  int block_size() const { return block_size_; }
  int n_slots() const { return n_blocks_ * block_size_; }
  // [n_slots, k_width] / [n_slots, v_width] device views of layer l's shard `rank` (a host layer's: the staging layer).
  TensorView k(int layer, int rank = 0) const;
  TensorView v(int layer, int rank = 0) const;
  size_t total_bytes() const;  // device memory, the host tiers' staging included
  // The tier that keeps shard `rank` of layer l in host memory, or null where that shard lives on its device.
  KvHostTier* host_tier(int layer, int rank) const;
  // Every device's tier (none when every layer lives on the devices); a forward step begins and ends each.
  const std::vector<std::unique_ptr<KvHostTier>>& host_tiers() const { return host_; }
  // The layers in host memory, ascending, and what the cache was asked for (an MPI worker's cache repeats it).
  const std::vector<int>& host_layers() const { return host_layers_; }
  const KvHostLayers& host_request() const { return host_request_; }
  KvHostTraffic host_traffic() const;

 private:
  KvSpec spec_;
  int n_blocks_ = 0;
  int block_size_ = 0;
  std::vector<hal::Buffer> buffers_;
  std::vector<std::vector<TensorView>> k_, v_;  // [layer][rank]; a host layer's shard: empty (its tier's staging)
  KvHostLayers host_request_;
  std::vector<int> host_layers_;
  std::vector<std::unique_ptr<KvHostTier>> host_;
  std::vector<std::vector<KvHostTier*>> host_of_;  // [layer][rank]; empty without tiers
};

// The host tier for a log line: "layers 2..3, 6..7 (4 of 8) in host memory (1.0 MiB), streamed to a staging layer on
// simt:0, simt:1 each step" (the bytes and devices of this process's tiers).
std::string describe_host_tier(const KvCache& kv);

// One K or V part of a cache layer: a [n_slots, width] view of `dtype` on `device` (zeroed where the host addresses
// it), whose buffer is appended to `buffers`; width 0 allocates nothing.
Result<TensorView> allocate_kv_rows(hal::Device& device, DType dtype, int64_t n_slots, int64_t width,
                                    std::vector<hal::Buffer>& buffers);

// The simplest block table: one sequence owning blocks 0, 1, 2, ... (CLI runs, eval, bench).
std::vector<int32_t> identity_block_table(int n_blocks);

}  // namespace cai
