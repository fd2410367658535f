// The serving engine's KV cache sizing (engine_kv_sizing.h).
#include "runtime/engine_kv_sizing.h"

#include <algorithm>
#include <map>

#include "core/log.h"
#include "hal/remote_device.h"

namespace cai {

size_t default_kv_bytes(const Model& m, const EngineOptions& o, size_t block_bytes, int host_layers) {
  constexpr size_t kHostDefault = size_t(256) << 20;
  // Row widths of the cache on each device, and over all of them.
  std::map<hal::Device*, size_t> width_on;
  size_t width = 0;
  for (const std::vector<KvShard>& layer : m.kv_shards())
    for (const KvShard& s : layer) width_on[s.device] += s.k_width + s.v_width, width += s.k_width + s.v_width;
  if (std::all_of(width_on.begin(), width_on.end(), [](const auto& e) { return e.first->host_visible(); }))
    return kHostDefault;
  const int ctx = o.ctx_size > 0 ? o.ctx_size : m.config().max_position_embeddings;
  const size_t blocks_per_seq = static_cast<size_t>((ctx + o.block_size - 1) / o.block_size);
  const size_t want = static_cast<size_t>(o.max_batch) * blocks_per_seq * block_bytes;
  if (host_layers > 0) return want;
  // Each device holds its share of every block: the one with the least free memory for its share bounds the cache.
  size_t fit = want;
  for (const auto& [d, w] : width_on)
    if (!d->host_visible() && w > 0) fit = std::min(fit, d->memory_info().free_bytes / 10 * 9 / w * width);
  return fit;
}

Result<int> host_layers_for(const Model& m, const EngineOptions& o) {
  const int n = o.kv_offload_layers, n_layers = m.kv_spec().n_layers;
  if (n < 0 || n > n_layers)
    return invalid_argument("--kv-offload-layers {}: the model has {} layers with a KV cache", n, n_layers);
  const std::vector<std::vector<KvShard>> shards = m.kv_shards();
  const bool all_host = std::all_of(shards.begin(), shards.end(), [](const std::vector<KvShard>& layer) {
    return std::all_of(layer.begin(), layer.end(), [](const KvShard& s) { return hal::host_addresses(*s.device); });
  });
  if (n > 0 && all_host) {
    CAI_LOG_INFO("KV offload of {} layers has no effect on {}: its KV cache is in host memory already", n,
                 m.device().name());
    return 0;
  }
  return n;
}

Result<KvCache> create_kv_cache(const Model& m, const EngineOptions& o, int n_blocks, int host_layers) {
  const KvSpec spec = m.kv_spec();
  Result<KvCache> kv =
      KvCache::create(m.kv_shards(), spec, n_blocks, o.block_size, {host_layers, o.max_tokens_per_step});
  if (kv.ok() || host_layers == 0) return kv;
  if (m.devices().size() > 1)
    return Status(kv.status().code(), fmt::format("KV cache of {} blocks with {} of {} layers in host memory: {}",
                                                  n_blocks, host_layers, spec.n_layers, kv.status().message()));
  const uint64_t layer_bytes = spec.bytes_per_token() / static_cast<uint64_t>(spec.n_layers) *
                               static_cast<uint64_t>(n_blocks) * static_cast<uint64_t>(o.block_size);
  return Status(kv.status().code(),
                fmt::format("KV cache of {} blocks with {} of {} layers in host memory needs {} bytes of device memory "
                            "({} layers and one staging layer of {} bytes each): {}",
                            n_blocks, host_layers, spec.n_layers,
                            layer_bytes * static_cast<uint64_t>(spec.n_layers - host_layers + 1),
                            spec.n_layers - host_layers, layer_bytes, kv.status().message()));
}

Status check_context_fits(const EngineOptions& o, int ctx, int n_blocks, size_t block_bytes, size_t kv_bytes) {
  const int64_t fit = int64_t{n_blocks} * o.block_size;
  if (o.ctx_size <= 0 || ctx <= fit) return {};
  const int64_t need_blocks = (int64_t{ctx} + o.block_size - 1) / o.block_size;
  const uint64_t need_bytes = static_cast<uint64_t>(need_blocks) * block_bytes;
  const std::string need = fmt::format(
      "-c {} needs {} bytes of KV cache for one sequence ({} blocks of {} tokens, {} "
      "bytes each)",
      ctx, need_bytes, need_blocks, o.block_size, block_bytes);
  if (o.n_kv_blocks > 0)
    return invalid_argument(
        "{}, but --kv-blocks {} holds {} tokens: raise --kv-blocks to at least {} or lower -c to "
        "at most {}",
        need, o.n_kv_blocks, fit, need_blocks, fit);
  if (o.kv_memory_bytes > 0)
    return invalid_argument(
        "{}, but --kv-memory {} bytes holds {} blocks ({} tokens): raise --kv-memory to at least "
        "{} bytes or lower -c to at most {}",
        need, o.kv_memory_bytes, n_blocks, fit, need_bytes, fit);
  CAI_LOG_WARN(
      "{}, but the automatic KV cache size ({} bytes) holds {} blocks ({} tokens): serving a context of {} "
      "tokens; raise --kv-memory to at least {} bytes or lower -c to at most {}",
      need, kv_bytes, n_blocks, fit, fit, need_bytes, fit);
  return {};
}

}  // namespace cai
