// KvHostTier: host layers, the staging layer, and the per-step upload of read blocks and write-back of new rows.
#include "model/kv_host_tier.h"

#include <algorithm>
#include <cstring>

#include "core/quant.h"
#include "model/kv_cache.h"
#include "model/model.h"
#include "ops/ops.h"

namespace cai {

namespace {

Result<hal::Buffer> allocate(hal::Device& d, size_t n, hal::MemoryKind kind, const char* what) {
  Result<hal::Buffer> b = d.allocate(n, kind);
  if (!b.ok())
    return Status(b.status().code(), fmt::format("host KV tier: {} ({} bytes): {}", what, n, b.status().message()));
  return b;
}

}  // namespace

Result<KvHostTier> KvHostTier::create(hal::Device& device, const Shape& shape, std::vector<int> layers) {
  if (is_quantized(shape.dtype))
    return invalid_argument("host KV tier: a {} KV cache cannot be offloaded (use f32, f16 or bf16)",
                            dtype_name(shape.dtype));
  if (layers.empty() || !std::is_sorted(layers.begin(), layers.end()) || layers.front() < 0 || shape.n_slots <= 0 ||
      shape.block_size <= 0 || shape.max_step_tokens <= 0)
    return invalid_argument("host KV tier: {} layers, {} slots, block {}, {} tokens per step", layers.size(),
                            shape.n_slots, shape.block_size, shape.max_step_tokens);
  KvHostTier t;
  t.device_ = &device;
  t.dtype_ = shape.dtype;
  t.layers_ = std::move(layers);
  t.block_size_ = shape.block_size;
  t.max_step_tokens_ = shape.max_step_tokens;
  t.k_width_ = shape.k_width;
  t.v_width_ = shape.v_width;
  for (int which = 0; which < 2; ++which) {
    Result<TensorView> view =
        allocate_kv_rows(device, shape.dtype, shape.n_slots, which == 0 ? t.k_width_ : t.v_width_, t.stage_);
    if (!view.ok())
      return Status(view.status().code(), fmt::format("host KV tier: the staging layer: {}", view.status().message()));
    (which == 0 ? t.stage_k_ : t.stage_v_) = *view;
  }
  const size_t rows =
      t.layers_.size() * static_cast<size_t>(shape.max_step_tokens) * static_cast<size_t>(t.k_width_ + t.v_width_);
  CAI_ASSIGN_OR_RETURN(t.rows_,
                       allocate(device, rows * sizeof(float), hal::MemoryKind::kDevice, "the step's new rows"));
  // Host memory last: a device too small fails before gigabytes of host memory are set aside.
  for (size_t l = 0; l < t.layers_.size(); ++l) {
    HostLayer h;
    for (int which = 0; which < 2; ++which) {
      const size_t n = (which == 0 ? t.k_row_bytes() : t.v_row_bytes()) * static_cast<size_t>(shape.n_slots);
      if (n == 0) continue;
      CAI_ASSIGN_OR_RETURN(hal::Buffer b, allocate(device, n, hal::MemoryKind::kHostPinned, "a host layer"));
      std::memset(b.data(), 0, n);
      (which == 0 ? h.k : h.v) = std::move(b);
    }
    t.host_.push_back(std::move(h));
  }
  return t;
}

size_t KvHostTier::index_of(int layer) const {
  return static_cast<size_t>(std::lower_bound(layers_.begin(), layers_.end(), layer) - layers_.begin());
}

size_t KvHostTier::host_bytes() const {
  size_t n = 0;
  for (const HostLayer& h : host_) n += h.k.size() + h.v.size();
  return n;
}

size_t KvHostTier::staging_bytes() const {
  size_t n = rows_.size();
  for (const hal::Buffer& b : stage_) n += b.size();
  return n;
}

// Rows of host layer `layer` in the new-rows buffer, for the step's tokens: K first, then V.
TensorView KvHostTier::step_rows(int layer, bool values) const {
  const int64_t n = static_cast<int64_t>(slots_.size());
  const int64_t per_layer = n * (k_width_ + v_width_);
  float* base = static_cast<float*>(rows_.data()) + per_layer * static_cast<int64_t>(index_of(layer));
  TensorView v = values ? TensorView::make(base + n * k_width_, DType::kF32, {n, v_width_})
                        : TensorView::make(base, DType::kF32, {n, k_width_});
  v.device = device_;
  return v;
}

Status KvHostTier::begin_step(const StepBatch& batch) {
  if (batch.slots.size() > static_cast<size_t>(max_step_tokens_))
    return invalid_argument("host KV tier: a step of {} tokens, above the {} it was sized for", batch.slots.size(),
                            max_step_tokens_);
  slots_ = batch.slots;
  std::vector<int64_t> blocks;
  for (const hal::AttnSeq& s : batch.seqs) {
    const int64_t used = (int64_t{s.pos0} + s.n_q + block_size_ - 1) / block_size_;
    blocks.insert(blocks.end(), s.block_table, s.block_table + used);
  }
  std::sort(blocks.begin(), blocks.end());
  blocks.erase(std::unique(blocks.begin(), blocks.end()), blocks.end());
  runs_.clear();
  for (int64_t b : blocks) {
    if (!runs_.empty() && runs_.back().first + runs_.back().count == b)
      ++runs_.back().count;
    else
      runs_.push_back({b, 1});
  }
  return {};
}

Status KvHostTier::stage_in(int layer) {
  const HostLayer& h = host_[index_of(layer)];
  hal::Stream& stream = device_->default_stream();
  auto upload = [&](const hal::Buffer& host, const TensorView& stage, size_t row, const BlockRun& r) -> Status {
    const size_t first = static_cast<size_t>(r.first * block_size_) * row,
                 n = static_cast<size_t>(r.count * block_size_) * row;
    bytes_up_ += n;
    return stream.copy_to_device(static_cast<char*>(stage.data) + first, static_cast<const char*>(host.data()) + first,
                                 n);
  };
  for (const BlockRun& r : runs_) {
    CAI_TRY(upload(h.k, stage_k_, k_row_bytes(), r));
    if (v_width_ > 0) CAI_TRY(upload(h.v, stage_v_, v_row_bytes(), r));
  }
  return {};
}

Status KvHostTier::keep_new_rows(int layer, const TensorView& slots) {
  CAI_TRY(ops::embed(*device_, stage_k_, slots, step_rows(layer, false)));
  if (v_width_ > 0) CAI_TRY(ops::embed(*device_, stage_v_, slots, step_rows(layer, true)));
  return {};
}

Status KvHostTier::end_step() {
  const size_t n = slots_.size();
  const size_t per_layer = n * static_cast<size_t>(k_width_ + v_width_);
  rows_host_.resize(per_layer * layers_.size());
  CAI_TRY(device_->default_stream().copy_to_host(rows_host_.data(), rows_.data(), rows_host_.size() * sizeof(float)));
  bytes_down_ += rows_host_.size() * sizeof(float);
  for (size_t l = 0; l < layers_.size(); ++l) {
    const float* k_rows = rows_host_.data() + per_layer * l;
    const float* v_rows = k_rows + n * static_cast<size_t>(k_width_);
    const HostLayer& h = host_[l];
    for (size_t i = 0; i < n; ++i) {
      const size_t slot = static_cast<size_t>(slots_[i]);
      CAI_TRY(quantize_row(dtype_, k_rows + i * static_cast<size_t>(k_width_),
                           static_cast<char*>(h.k.data()) + slot * k_row_bytes(), k_width_));
      if (v_width_ > 0)
        CAI_TRY(quantize_row(dtype_, v_rows + i * static_cast<size_t>(v_width_),
                             static_cast<char*>(h.v.data()) + slot * v_row_bytes(), v_width_));
    }
  }
  return {};
}

}  // namespace cai
