// KvHostTier: the host KV tier ("layered offload"). The K/V of the last layers live in host (pinned) memory; each step
// uploads the blocks the batch reads into one device staging layer before that layer's attention, and brings the rows
// the step wrote back into host memory once the step's layers are done.
#pragma once

#include <cstdint>
#include <vector>

#include "core/status.h"
#include "core/tensor_view.h"
#include "hal/hal.h"

namespace cai {

struct KvSpec;
struct StepBatch;

class KvHostTier {
 public:
  // Layers [first_layer, spec.n_layers) in host memory, n_slots token slots each, plus one device staging layer and
  // room for the rows of max_step_tokens tokens. Errors: a block-quantized dtype (rows come back through F32), and
  // allocation failures naming what was being allocated.
  static Result<KvHostTier> create(hal::Device& device, const KvSpec& spec, int first_layer, int64_t n_slots,
                                   int block_size, int max_step_tokens);

  bool holds(int layer) const { return layer >= first_layer_; }
  int first_layer() const { return first_layer_; }
  int n_layers() const { return n_layers_; }
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
  int first_layer_ = 0, n_layers_ = 0, block_size_ = 0, max_step_tokens_ = 0;
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
  TensorView step_rows(int layer, bool values) const;
};

}  // namespace cai
