// KvHostTier: the host KV tier ("layered offload") of one device. The K/V that device's shards of some layers keep
// live in host (pinned) memory; each step uploads the blocks the batch reads into one device staging layer before
// such a layer's attention, and brings the rows the step wrote back into host memory once the step's layers are done.
#pragma once

#include <cstdint>
#include <vector>

#include "core/status.h"
#include "core/tensor_view.h"
#include "hal/hal.h"

namespace cai {

struct StepBatch;

class KvHostTier {
 public:
  // What every host layer of the tier stores: rows of k_width and v_width elements of dtype (this device's shard of
  // the layer), n_slots of them, and steps of at most max_step_tokens tokens.
  struct Shape {
    DType dtype = DType::kF32;
    int64_t k_width = 0, v_width = 0;
    int64_t n_slots = 0;
    int block_size = 0, max_step_tokens = 0;
  };
  // `layers` (ascending) in host memory, plus one staging layer and room for the step's new rows on `device`.
  // Errors: a block-quantized dtype (rows come back through F32), and allocation failures naming what was being
  // allocated.
  static Result<KvHostTier> create(hal::Device& device, const Shape& shape, std::vector<int> layers);

  hal::Device& device() const { return *device_; }
  size_t host_bytes() const;     // the host layers' K and V
  size_t staging_bytes() const;  // device memory of the staging layer
  // The staging layer's [n_slots, width] views: what attention reads and writes for a host layer.
  const TensorView& staging_k() const { return stage_k_; }
  const TensorView& staging_v() const { return stage_v_; }
  // Bytes copied host → device and device → host so far.
  uint64_t bytes_uploaded() const { return bytes_up_; }
  uint64_t bytes_downloaded() const { return bytes_down_; }

  // One forward step: begin_step notes the blocks the batch reads and the slots it writes; stage_in queues the upload
  // of those blocks of `layer` into staging (before its attention); keep_new_rows gathers the rows the attention just
  // wrote at `slots` (the step's device slot tensor) into a device buffer; end_step copies them to host memory in one
  // blocking copy and stores them in their host layers.
  Status begin_step(const StepBatch& batch);
  Status stage_in(int layer);
  Status keep_new_rows(int layer, const TensorView& slots);
  Status end_step();

 private:
  struct BlockRun {
    int64_t first = 0, count = 0;
  };
  struct HostLayer {
    hal::Buffer k, v;
  };
  hal::Device* device_ = nullptr;
  DType dtype_ = DType::kF32;
  std::vector<int> layers_;
  int block_size_ = 0, max_step_tokens_ = 0;
  int64_t k_width_ = 0, v_width_ = 0;
  std::vector<HostLayer> host_;
  std::vector<hal::Buffer> stage_;
  TensorView stage_k_, stage_v_;
  hal::Buffer rows_;  // F32 rows the step wrote: per host layer, [n_tok, k_width] then [n_tok, v_width]
  std::vector<float> rows_host_;
  std::vector<BlockRun> runs_;  // the step's blocks, merged into runs of consecutive ids
  std::vector<int32_t> slots_;  // the step's slots, in token order
  uint64_t bytes_up_ = 0, bytes_down_ = 0;

  size_t k_row_bytes() const { return row_bytes(dtype_, k_width_); }
  size_t v_row_bytes() const { return row_bytes(dtype_, v_width_); }
  size_t index_of(int layer) const;  // the layer's place in layers_
  TensorView step_rows(int layer, bool values) const;
};

}  // namespace cai
