// BlockPool: fixed-size KV blocks with ref counts, a free list in eviction order, and the prefix-cache map.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <unordered_map>
#include <vector>

#include "runtime/kv/block_hash.h"

namespace cai {

// Blocks are ids 0..n_total-1. A block is free when its ref count is 0; free blocks sit in a list in
// eviction order (least recently freed first). A full block may carry a hash (it is "cached"): while its
// ref count is 0 it stays in the free list and is still found by lookup() until allocate() reuses it for
// new data, which drops its hash. Not thread-safe.
class BlockPool {
 public:
  explicit BlockPool(int n_blocks);

  // n blocks with ref count 1, taken from the head of the free list (evicting cached ones), or nullopt
  // when fewer than n are free (then nothing changes).
  std::optional<std::vector<int32_t>> allocate(int n);
  // Takes one more reference to a block (a prefix-cache hit); a free block leaves the free list.
  void incref(int32_t id);
  // Drops one reference to each block; blocks reaching 0 join the tail of the free list in the order given.
  void free(std::span<const int32_t> ids);

  // Registers a block (held, full) under `hash`. False when the hash already names another block or the
  // block already has a hash; the block then stays uncached.
  bool cache_block(int32_t id, BlockHash hash);
  std::optional<int32_t> lookup(BlockHash hash) const;
  std::optional<BlockHash> block_hash(int32_t id) const;

  int ref_count(int32_t id) const { return ref_count_[size_t(id)]; }
  int n_total() const { return int(ref_count_.size()); }
  int n_free() const { return n_free_; }
  int n_used() const { return n_total() - n_free_; }
  int n_cached() const { return int(hash_to_block_.size()); }
  uint64_t n_evictions() const { return n_evictions_; }
  // The free list, next block to be reused first.
  std::vector<int32_t> free_list() const;

 private:
  void unlink(int32_t id);
  void push_back(int32_t id);

  std::vector<int32_t> ref_count_;
  std::vector<std::optional<BlockHash>> hash_;
  // Intrusive doubly linked free list over block ids; index n_total() is the sentinel.
  std::vector<int32_t> prev_, next_;
  int n_free_ = 0;
  std::unordered_map<BlockHash, int32_t> hash_to_block_;
  uint64_t n_evictions_ = 0;
};

}  // namespace cai
