// KvCacheManager: per-request block tables over a BlockPool, with prefix caching of full blocks.
#pragma once

#include <cstdint>
#include <span>
#include <unordered_map>
#include <vector>

#include "runtime/kv/block_hash.h"
#include "runtime/kv/block_pool.h"

namespace cai {

// The longest cached prefix of a token sequence, in whole blocks.
struct ComputedPrefix {
  std::vector<int32_t> blocks;    // cached blocks holding tokens [0, n_tokens), in order
  std::vector<BlockHash> hashes;  // their chain hashes
  int n_tokens = 0;               // blocks.size() * block_size
};

// Cache slot of position `pos` of a sequence whose block table is `table`.
inline int64_t kv_slot(std::span<const int32_t> table, int block_size, int64_t pos) {
  return int64_t(table[size_t(pos / block_size)]) * block_size + pos % block_size;
}

// Prefix caching: after a step, every newly full block of a request is registered under its chain hash.
// A later request whose tokens start with the same full blocks reuses them (ref count) instead of
// recomputing. A hit is exact: besides the 64-bit hash, the block's token ids and its parent's hash are
// compared, and the hash is seeded per manager at random so crafted prompts cannot aim at a collision.
// Not thread-safe.
class KvCacheManager {
 public:
  KvCacheManager(int n_blocks, int block_size, bool prefix_caching);

  // Cached full blocks that start `tokens`, capped so at least one token remains to compute (the last
  // token must run to produce logits). Takes no references; pass the result to allocate_slots() at once.
  // Empty when prefix caching is off.
  ComputedPrefix get_computed_blocks(std::span<const int32_t> tokens) const;

  // The first full blocks of request `owner`'s table, to share by reference with a request whose tokens start with
  // the same `n_tokens` tokens (rounded down to whole blocks) and whose KV the owner has computed. Takes no references;
  // pass the result to allocate_slots() at once. Works with prefix caching off too.
  ComputedPrefix shared_prefix(uint64_t owner, int n_tokens) const;

  // Grows request `id`'s block table to hold `n_tokens` positions. For a request without a table,
  // `prefix` (from get_computed_blocks) becomes its first blocks by taking references. False, changing
  // nothing, when the pool has too few free blocks.
  bool allocate_slots(uint64_t id, int n_tokens, const ComputedPrefix& prefix = {});

  // Registers the blocks of `id` that the first `n_computed` tokens fill completely and that are not yet
  // cached. `tokens` holds at least n_computed ids.
  void cache_full_blocks(uint64_t id, std::span<const int32_t> tokens, int n_computed);

  // Releases the request's blocks, its tail first so that tails are evicted before the shared heads.
  void free(uint64_t id);

  bool has(uint64_t id) const { return requests_.count(id) != 0; }
  std::span<const int32_t> block_table(uint64_t id) const;  // empty for an unknown id
  int n_cached_tokens(uint64_t id) const;                   // prefix-cache hit tokens at admission
  int64_t slot(uint64_t id, int64_t pos) const { return kv_slot(block_table(id), block_size_, pos); }

  int n_blocks_for(int64_t n_tokens) const { return int((n_tokens + block_size_ - 1) / block_size_); }
  int block_size() const { return block_size_; }
  bool prefix_caching() const { return prefix_caching_; }
  const BlockPool& pool() const { return pool_; }

 private:
  struct RequestBlocks {
    std::vector<int32_t> table;
    std::vector<BlockHash> hashes;  // chain hashes of table[0 .. hashes.size()), already registered or tried
    int n_cached_tokens = 0;
  };

  // Whether cached block `id` holds exactly `tokens` after the block hashed `parent`.
  bool same_contents(int32_t id, BlockHash parent, std::span<const int32_t> tokens) const;

  BlockPool pool_;
  int block_size_;
  bool prefix_caching_;
  uint64_t seed_;
  std::unordered_map<uint64_t, RequestBlocks> requests_;
  // What each cached block holds, written when it is registered: block_size token ids and the parent hash.
  std::vector<int32_t> cached_tokens_;
  std::vector<BlockHash> cached_parent_;
};

}  // namespace cai
