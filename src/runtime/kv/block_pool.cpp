// BlockPool: ref counts, the eviction-ordered free list and the hash → block map.
#include "runtime/kv/block_pool.h"

#include "core/status.h"

namespace cai {
namespace {

size_t checked_block_count(int n_blocks) {
  CAI_CHECK(n_blocks > 0, "a block pool needs at least one block, got {}", n_blocks);
  return size_t(n_blocks);
}

}  // namespace

BlockPool::BlockPool(int n_blocks)
    : ref_count_(checked_block_count(n_blocks), 0), hash_(size_t(n_blocks)), prev_(size_t(n_blocks) + 1),
      next_(size_t(n_blocks) + 1) {
  const int32_t sentinel = n_blocks;
  prev_[size_t(sentinel)] = next_[size_t(sentinel)] = sentinel;
  for (int32_t id = 0; id < n_blocks; ++id) push_back(id);
}

void BlockPool::unlink(int32_t id) {
  const int32_t p = prev_[size_t(id)], n = next_[size_t(id)];
  next_[size_t(p)] = n;
  prev_[size_t(n)] = p;
  --n_free_;
}

void BlockPool::push_back(int32_t id) {
  const int32_t sentinel = n_total();
  const int32_t last = prev_[size_t(sentinel)];
  next_[size_t(last)] = id;
  prev_[size_t(id)] = last;
  next_[size_t(id)] = sentinel;
  prev_[size_t(sentinel)] = id;
  ++n_free_;
}

std::optional<std::vector<int32_t>> BlockPool::allocate(int n) {
  CAI_CHECK(n >= 0, "negative block count {}", n);
  if (n > n_free_) return std::nullopt;
  std::vector<int32_t> ids;
  ids.reserve(size_t(n));
  const int32_t sentinel = n_total();
  for (int i = 0; i < n; ++i) {
    const int32_t id = next_[size_t(sentinel)];
    unlink(id);
    if (auto& h = hash_[size_t(id)]) {  // evict: the block is about to hold new data
      hash_to_block_.erase(*h);
      h.reset();
      ++n_evictions_;
    }
    ref_count_[size_t(id)] = 1;
    ids.push_back(id);
  }
  return ids;
}

void BlockPool::incref(int32_t id) {
  CAI_CHECK(id >= 0 && id < n_total(), "block id {} out of range", id);
  if (ref_count_[size_t(id)]++ == 0) unlink(id);
}

void BlockPool::free(std::span<const int32_t> ids) {
  for (int32_t id : ids) {
    CAI_CHECK(id >= 0 && id < n_total(), "block id {} out of range", id);
    CAI_CHECK(ref_count_[size_t(id)] > 0, "block {} freed more often than taken", id);
    if (--ref_count_[size_t(id)] == 0) push_back(id);
  }
}

bool BlockPool::cache_block(int32_t id, BlockHash hash) {
  CAI_CHECK(id >= 0 && id < n_total() && ref_count_[size_t(id)] > 0, "caching block {} that is not held", id);
  if (hash_[size_t(id)] || hash_to_block_.count(hash)) return false;
  hash_[size_t(id)] = hash;
  hash_to_block_.emplace(hash, id);
  return true;
}

std::optional<int32_t> BlockPool::lookup(BlockHash hash) const {
  auto it = hash_to_block_.find(hash);
  if (it == hash_to_block_.end()) return std::nullopt;
  return it->second;
}

std::optional<BlockHash> BlockPool::block_hash(int32_t id) const {
  CAI_CHECK(id >= 0 && id < n_total(), "block id {} out of range", id);
  return hash_[size_t(id)];
}

std::vector<int32_t> BlockPool::free_list() const {
  std::vector<int32_t> ids;
  ids.reserve(size_t(n_free_));
  const int32_t sentinel = n_total();
  for (int32_t id = next_[size_t(sentinel)]; id != sentinel; id = next_[size_t(id)]) ids.push_back(id);
  return ids;
}

}  // namespace cai
