// The serving engine's KV cache sizing: the bytes it gets when the user gives none, the layers that go to the host
// tier, the cache itself, and the check that one sequence of the asked context fits.
#pragma once

#include "cai/engine.h"
#include "model/kv_cache.h"

namespace cai {

// KV bytes when the user gave none: host memory is shared with everything else, so a fixed 256 MiB; a device's own
// memory is taken at 90 % of what is free after the weights, up to max_batch full contexts. With host layers the
// cache holds max_batch full contexts: the host tier exists to make room for them.
size_t default_kv_bytes(const Model& m, const EngineOptions& o, size_t block_bytes, int host_layers);
// The host layers the engine gives its cache: none where the host addresses every device's memory (the CPU: nothing
// to offload to).
Result<int> host_layers_for(const Model& m, const EngineOptions& o);
// The cache itself; with host layers an allocation failure says how the device memory was being split.
Result<KvCache> create_kv_cache(const Model& m, const EngineOptions& o, int n_blocks, int host_layers);
// Checks that one sequence of the asked context fits the n_blocks KV blocks. When the user sized both the context
// and the KV cache they contradict each other: an error naming both numbers, what a full context needs and what to
// change. When only the context was asked the cache was sized automatically: the engine serves the context that
// fits, with a warning carrying the same numbers. The model's own context shrinks to what fits (the info line says).
Status check_context_fits(const EngineOptions& o, int ctx, int n_blocks, size_t block_bytes, size_t kv_bytes);

}  // namespace cai
