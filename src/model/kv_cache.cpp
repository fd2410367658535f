// KvCache allocation (one buffer per layer for K and one for V) and the choice of its dtype.
#include "model/kv_cache.h"

#include "hal/remote_device.h"

#include <algorithm>
#include <cstring>
#include <numeric>

namespace cai {

DType default_kv_dtype(const hal::Device& device) { return hal::host_addresses(device) ? DType::kF32 : DType::kBF16; }

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

Result<std::vector<int>> host_kv_layers(const std::vector<std::vector<KvShard>>& layers, int n) {
  if (n < 0 || n > static_cast<int>(layers.size()))
    return invalid_argument("KV host layers: {} asked of {} layers", n, layers.size());
  if (n == 0) return std::vector<int>{};
  auto same_devices = [](const std::vector<KvShard>& a, const std::vector<KvShard>& b) {
    return std::equal(a.begin(), a.end(), b.begin(), b.end(),
                      [](const KvShard& x, const KvShard& y) { return x.device == y.device; });
  };
  auto own_memory = [](const std::vector<KvShard>& shards) {
    return std::none_of(shards.begin(), shards.end(), [](const KvShard& s) { return hal::host_addresses(*s.device); });
  };
  struct Stage {
    int begin = 0, end = 0;
  };
  std::vector<Stage> stages;  // the stages whose devices have memory of their own
  int eligible = 0;
  for (int l = 0; l < static_cast<int>(layers.size());) {
    int end = l + 1;
    while (end < static_cast<int>(layers.size()) &&
           same_devices(layers[static_cast<size_t>(l)], layers[static_cast<size_t>(end)]))
      ++end;
    if (own_memory(layers[static_cast<size_t>(l)])) {
      stages.push_back({l, end});
      eligible += end - l;
    }
    l = end;
  }
  if (eligible == 0)
    return invalid_argument(
        "KV host layers: every layer's cache is on a device whose memory the host addresses ({}); "
        "there is no device memory to spare",
        layers.front().front().device->name());
  if (n > eligible)
    return invalid_argument(
        "KV host layers: {} asked, but only {} of the {} layers run on devices with memory of their "
        "own",
        n, eligible, layers.size());
  // Stage s gives round(n · C(s+1) / E) − round(n · C(s) / E) of its last layers, C counting the eligible layers
  // before it: shares in proportion to the stages' layers that add up to n.
  auto rounded = [&](int before) { return (2 * n * before + eligible) / (2 * eligible); };
  std::vector<int> out;
  int before = 0;
  for (const Stage& st : stages) {
    const int take = rounded(before + st.end - st.begin) - rounded(before);
    for (int l = st.end - take; l < st.end; ++l) out.push_back(l);
    before += st.end - st.begin;
  }
  return out;
}

Result<KvCache> KvCache::create(const std::vector<std::vector<KvShard>>& layers, const KvSpec& spec, int n_blocks,
                                int block_size, KvHostLayers host) {
  if (n_blocks <= 0 || block_size <= 0) return invalid_argument("KV cache needs positive blocks and block size");
  if (static_cast<int>(layers.size()) != spec.n_layers || layers.empty() || layers.front().empty())
    return invalid_argument("KV cache: {} layers of shards for {} layers", layers.size(), spec.n_layers);
  for (const auto& shards : layers)
    for (const KvShard& s : shards) CAI_TRY(hal::check_kv_cache_dtype(*s.device, "KvCache::create", spec.dtype));
  CAI_TRY(check_kv_layout(spec));
  CAI_ASSIGN_OR_RETURN(const std::vector<int> host_layers, host_kv_layers(layers, host.n_layers));
  KvCache kv;
  kv.spec_ = spec;
  kv.n_blocks_ = n_blocks;
  kv.block_size_ = block_size;
  kv.host_request_ = host;
  kv.host_layers_ = host_layers;
  const int64_t n_slots = static_cast<int64_t>(n_blocks) * block_size;
  // A shard of a host layer lives in its device's tier; another process's device keeps its stand-in layer (that
  // process's own cache makes the same choice for it).
  auto in_tier = [&](int l, const KvShard& s) {
    return !hal::is_remote(*s.device) && std::binary_search(host_layers.begin(), host_layers.end(), l);
  };
  // Each device's tier: its shards' widths and the host layers it keeps, in the order its device first appears.
  struct TierPlan {
    hal::Device* device;
    KvHostTier::Shape shape;
    std::vector<int> layers;
  };
  std::vector<TierPlan> tiers;
  std::vector<std::vector<int>> tier_of;  // [layer][rank]: the index of the shard's tier, -1 for a device layer
  for (int l = 0; l < spec.n_layers; ++l) {
    kv.k_.emplace_back();
    kv.v_.emplace_back();
    tier_of.emplace_back();
    for (const KvShard& s : layers[static_cast<size_t>(l)]) {
      if (in_tier(l, s)) {
        auto it = std::find_if(tiers.begin(), tiers.end(), [&](const TierPlan& t) { return t.device == s.device; });
        if (it == tiers.end())
          it = tiers.insert(
              tiers.end(),
              {s.device, {spec.dtype, s.k_width, s.v_width, n_slots, block_size, host.max_step_tokens}, {}});
        it->layers.push_back(l);
        tier_of.back().push_back(static_cast<int>(it - tiers.begin()));
        kv.k_.back().emplace_back();
        kv.v_.back().emplace_back();
        continue;
      }
      tier_of.back().push_back(-1);
      CAI_ASSIGN_OR_RETURN(TensorView k, allocate_kv_rows(*s.device, spec.dtype, n_slots, s.k_width, kv.buffers_));
      CAI_ASSIGN_OR_RETURN(TensorView v, allocate_kv_rows(*s.device, spec.dtype, n_slots, s.v_width, kv.buffers_));
      kv.k_.back().push_back(k);
      kv.v_.back().push_back(v);
    }
  }
  for (TierPlan& t : tiers) {
    CAI_ASSIGN_OR_RETURN(KvHostTier tier, KvHostTier::create(*t.device, t.shape, std::move(t.layers)));
    kv.host_.push_back(std::make_unique<KvHostTier>(std::move(tier)));
  }
  if (!kv.host_.empty())
    for (const std::vector<int>& ranks : tier_of) {
      kv.host_of_.emplace_back();
      for (int t : ranks) kv.host_of_.back().push_back(t < 0 ? nullptr : kv.host_[static_cast<size_t>(t)].get());
    }
  return kv;
}

std::string describe_host_tier(const KvCache& kv) {
  const std::vector<int>& layers = kv.host_layers();
  std::string ranges, devices;
  for (size_t i = 0; i < layers.size();) {
    size_t j = i;
    while (j + 1 < layers.size() && layers[j + 1] == layers[j] + 1) ++j;
    ranges += fmt::format("{}{}..{}", ranges.empty() ? "" : ", ", layers[i], layers[j]);
    i = j + 1;
  }
  for (const auto& tier : kv.host_tiers()) devices += (devices.empty() ? "" : ", ") + tier->device().name();
  if (devices.empty()) devices = "the other processes' devices";  // an MPI rank whose own layers stay on its device
  return fmt::format("layers {} ({} of {}) in host memory ({:.1f} MiB), streamed to a staging layer on {} each step",
                     ranges, layers.size(), kv.spec().n_layers,
                     static_cast<double>(kv.host_traffic().host_bytes) / (1 << 20), devices);
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

KvHostTier* KvCache::host_tier(int layer, int rank) const {
  return host_of_.empty() ? nullptr : host_of_[static_cast<size_t>(layer)][static_cast<size_t>(rank)];
}

TensorView KvCache::k(int layer, int rank) const {
  const KvHostTier* t = host_tier(layer, rank);
  return t ? t->staging_k() : k_[static_cast<size_t>(layer)][static_cast<size_t>(rank)];
}

TensorView KvCache::v(int layer, int rank) const {
  const KvHostTier* t = host_tier(layer, rank);
  return t ? t->staging_v() : v_[static_cast<size_t>(layer)][static_cast<size_t>(rank)];
}

KvHostTraffic KvCache::host_traffic() const {
  KvHostTraffic out;
  for (const auto& t : host_) {
    out.host_bytes += t->host_bytes();
    out.uploaded += t->bytes_uploaded();
    out.downloaded += t->bytes_downloaded();
  }
  return out;
}

size_t KvCache::total_bytes() const {
  size_t n = 0;
  for (const auto& t : host_) n += t->staging_bytes();
  for (const auto& b : buffers_) n += b.size();
  return n;
}

std::vector<int32_t> identity_block_table(int n_blocks) {
  std::vector<int32_t> t(static_cast<size_t>(n_blocks));
  std::iota(t.begin(), t.end(), 0);
  return t;
}

}  // namespace cai
