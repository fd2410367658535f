// KvCache allocation (one buffer per layer for K and one for V) and the choice of its dtype.
#include "model/kv_cache.h"

#include "hal/remote_device.h"

#include <algorithm>
#include <cstring>
#include <numeric>

namespace cai {

DType default_kv_dtype(const hal::Device& device) {
  const auto* remote = dynamic_cast<const hal::RemoteDevice*>(&device);
  return (remote ? remote->info().host_visible != 0 : device.host_visible()) ? DType::kF32 : DType::kBF16;
}

Result<DType> parse_kv_dtype(std::string_view name) {
  for (DType t : {DType::kF32, DType::kBF16, DType::kF16, DType::kQ8_0})
    if (name == dtype_name(t)) return t;
  return invalid_argument("--kv-dtype '{}': accepted values are f32, bf16, f16 and q8_0", name);
}

namespace {

// Rows of a block dtype hold whole blocks, and a kernel reads each part of a row on its own: every part (and width)
// must be a multiple of the block.
Status check_kv_layout(const KvSpec& spec) {
  const int block = dtype_info(spec.dtype).block_elems;
  std::vector<KvPart> parts = spec.parts;
  parts.push_back({"K row width", spec.k_width});
  parts.push_back({"V row width", spec.v_width});
  for (const KvPart& p : parts)
    if (p.width % block != 0)
      return invalid_argument("a {} KV cache stores {}-element blocks: {} {} is not a multiple of {}",
                              dtype_name(spec.dtype), block, p.name, p.width, block);
  return {};
}

}  // namespace

Result<KvCache> KvCache::create(hal::Device& device, const KvSpec& spec, int n_blocks, int block_size,
                                KvHostLayers host) {
  const std::vector<KvShard> one{{&device, spec.k_width, spec.v_width}};
  return create(std::vector<std::vector<KvShard>>(static_cast<size_t>(std::max(0, spec.n_layers)), one), spec, n_blocks,
                block_size, host);
}

Result<KvCache> KvCache::create(const std::vector<std::vector<KvShard>>& layers, const KvSpec& spec, int n_blocks,
                                int block_size, KvHostLayers host) {
  if (n_blocks <= 0 || block_size <= 0) return invalid_argument("KV cache needs positive blocks and block size");
  if (static_cast<int>(layers.size()) != spec.n_layers || layers.empty() || layers.front().empty())
    return invalid_argument("KV cache: {} layers of shards for {} layers", layers.size(), spec.n_layers);
  for (const auto& shards : layers)
    for (const KvShard& s : shards) CAI_TRY(hal::check_kv_cache_dtype(*s.device, "KvCache::create", spec.dtype));
  hal::Device& device = *layers.front().front().device;
  const bool one_device = std::all_of(layers.begin(), layers.end(), [&](const std::vector<KvShard>& shards) {
    return shards.size() == 1 && shards.front().device == &device;
  });
  if (host.n_layers > 0 && !one_device)
    return invalid_argument(
        "KV host layers: the layers run on several devices; the host tier takes one device's "
        "layers (set --kv-offload-layers 0)");
  CAI_TRY(check_kv_layout(spec));
  if (host.n_layers < 0 || host.n_layers > spec.n_layers)
    return invalid_argument("KV host layers: {} asked of {} layers", host.n_layers, spec.n_layers);
  if (host.n_layers > 0 && device.host_visible())
    return invalid_argument("KV host layers: {} addresses host memory already; there is no device memory to spare",
                            device.name());
  KvCache kv;
  kv.spec_ = spec;
  kv.n_blocks_ = n_blocks;
  kv.block_size_ = block_size;
  const int64_t n_slots = static_cast<int64_t>(n_blocks) * block_size;
  const int first_host = spec.n_layers - host.n_layers;
  for (int l = 0; l < first_host; ++l) {
    kv.k_.emplace_back();
    kv.v_.emplace_back();
    for (const KvShard& s : layers[static_cast<size_t>(l)]) {
      CAI_ASSIGN_OR_RETURN(TensorView k, allocate_kv_rows(*s.device, spec.dtype, n_slots, s.k_width, kv.buffers_));
      CAI_ASSIGN_OR_RETURN(TensorView v, allocate_kv_rows(*s.device, spec.dtype, n_slots, s.v_width, kv.buffers_));
      kv.k_.back().push_back(k);
      kv.v_.back().push_back(v);
    }
  }
  if (host.n_layers > 0) {
    CAI_ASSIGN_OR_RETURN(KvHostTier tier,
                         KvHostTier::create(device, spec, first_host, n_slots, block_size, host.max_step_tokens));
    kv.host_ = std::make_unique<KvHostTier>(std::move(tier));
  }
  return kv;
}

Result<TensorView> allocate_kv_rows(hal::Device& device, DType dtype, int64_t n_slots, int64_t width,
                                    std::vector<hal::Buffer>& buffers) {
  TensorView view = TensorView::make(nullptr, dtype, {n_slots, width});
  if (width == 0) return view;
  CAI_ASSIGN_OR_RETURN(hal::Buffer buf, device.allocate(view.n_bytes()));
  if (device.host_visible()) std::memset(buf.data(), 0, buf.size());
  view.data = buf.data();
  view.device = &device;
  buffers.push_back(std::move(buf));
  return view;
}

TensorView KvCache::k(int layer, int rank) const {
  return host_ && host_->holds(layer) ? host_->staging_k() : k_[static_cast<size_t>(layer)][static_cast<size_t>(rank)];
}

TensorView KvCache::v(int layer, int rank) const {
  return host_ && host_->holds(layer) ? host_->staging_v() : v_[static_cast<size_t>(layer)][static_cast<size_t>(rank)];
}

size_t KvCache::total_bytes() const {
  size_t n = host_ ? host_->staging_bytes() : 0;
  for (const auto& b : buffers_) n += b.size();
  return n;
}

std::vector<int32_t> identity_block_table(int n_blocks) {
  std::vector<int32_t> t(static_cast<size_t>(n_blocks));
  std::iota(t.begin(), t.end(), 0);
  return t;
}

}  // namespace cai
