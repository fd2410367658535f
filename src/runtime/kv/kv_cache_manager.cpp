// KvCacheManager: block tables, slot allocation and prefix-cache lookups and registration.
#include "runtime/kv/kv_cache_manager.h"

#include <algorithm>
#include <random>

#include "core/status.h"

namespace cai {

KvCacheManager::KvCacheManager(int n_blocks, int block_size, bool prefix_caching)
    : pool_(n_blocks), block_size_(block_size), prefix_caching_(prefix_caching) {
  CAI_CHECK(block_size > 0, "block size must be positive, got {}", block_size);
  std::random_device rd;
  seed_ = (uint64_t(rd()) << 32) ^ rd();
  if (prefix_caching_) {
    cached_tokens_.resize(size_t(n_blocks) * size_t(block_size));
    cached_parent_.resize(size_t(n_blocks));
  }
}

bool KvCacheManager::same_contents(int32_t id, BlockHash parent, std::span<const int32_t> tokens) const {
  if (cached_parent_[size_t(id)] != parent) return false;
  auto stored = cached_tokens_.begin() + ptrdiff_t(size_t(id) * size_t(block_size_));
  return std::equal(tokens.begin(), tokens.end(), stored);
}

ComputedPrefix KvCacheManager::get_computed_blocks(std::span<const int32_t> tokens) const {
  ComputedPrefix prefix;
  if (!prefix_caching_ || tokens.empty()) return prefix;
  const size_t bs = size_t(block_size_);
  const size_t n_max_blocks = (tokens.size() - 1) / bs;  // leave at least one token to compute
  BlockHash parent = kRootBlockHash;
  for (size_t i = 0; i < n_max_blocks; ++i) {
    auto block_tokens = tokens.subspan(i * bs, bs);
    const BlockHash h = hash_block(parent, block_tokens, seed_);
    const std::optional<int32_t> id = pool_.lookup(h);
    if (!id || !same_contents(*id, parent, block_tokens)) break;
    prefix.blocks.push_back(*id);
    prefix.hashes.push_back(h);
    parent = h;
  }
  prefix.n_tokens = int(prefix.blocks.size() * bs);
  return prefix;
}

ComputedPrefix KvCacheManager::shared_prefix(uint64_t owner, int n_tokens) const {
  ComputedPrefix prefix;
  auto it = requests_.find(owner);
  if (it == requests_.end() || n_tokens <= 0) return prefix;
  const RequestBlocks& req = it->second;
  const size_t n = std::min(size_t(n_tokens) / size_t(block_size_), req.table.size());
  prefix.blocks.assign(req.table.begin(), req.table.begin() + ptrdiff_t(n));
  prefix.hashes.assign(req.hashes.begin(), req.hashes.begin() + ptrdiff_t(std::min(n, req.hashes.size())));
  prefix.n_tokens = int(n) * block_size_;
  return prefix;
}

bool KvCacheManager::allocate_slots(uint64_t id, int n_tokens, const ComputedPrefix& prefix) {
  auto it = requests_.find(id);
  const bool is_new = it == requests_.end();
  CAI_CHECK(is_new || prefix.blocks.empty(), "request {} already has blocks; a prefix is for admission", id);
  CAI_CHECK(n_tokens >= prefix.n_tokens, "{} tokens cannot end inside the cached prefix of {}", n_tokens,
            prefix.n_tokens);
  const int n_have = is_new ? int(prefix.blocks.size()) : int(it->second.table.size());
  const int n_new_blocks = std::max(0, n_blocks_for(n_tokens) - n_have);
  // Prefix blocks that sit in the free list leave it when referenced, so they do not count as free.
  int n_prefix_free = 0;
  for (int32_t b : prefix.blocks) n_prefix_free += pool_.ref_count(b) == 0;
  if (n_new_blocks > pool_.n_free() - n_prefix_free) return false;

  if (is_new) {
    it = requests_.emplace(id, RequestBlocks{}).first;
    for (int32_t b : prefix.blocks) pool_.incref(b);
    it->second.table = prefix.blocks;
    it->second.hashes = prefix.hashes;
    it->second.n_cached_tokens = prefix.n_tokens;
  }
  std::optional<std::vector<int32_t>> fresh = pool_.allocate(n_new_blocks);
  CAI_CHECK(fresh.has_value(), "pool lost free blocks between the check and the allocation");
  it->second.table.insert(it->second.table.end(), fresh->begin(), fresh->end());
  return true;
}

void KvCacheManager::cache_full_blocks(uint64_t id, std::span<const int32_t> tokens, int n_computed) {
  if (!prefix_caching_) return;
  auto it = requests_.find(id);
  CAI_CHECK(it != requests_.end(), "request {} has no blocks", id);
  RequestBlocks& req = it->second;
  CAI_CHECK(n_computed >= 0 && size_t(n_computed) <= tokens.size(), "{} computed of {} tokens", n_computed,
            tokens.size());
  const size_t bs = size_t(block_size_);
  const size_t n_full = size_t(n_computed) / bs;
  CAI_CHECK(n_full <= req.table.size(), "request {}: {} computed tokens exceed its {} blocks", id, n_computed,
            req.table.size());
  for (size_t i = req.hashes.size(); i < n_full; ++i) {
    const BlockHash parent = i == 0 ? kRootBlockHash : req.hashes[i - 1];
    auto block_tokens = tokens.subspan(i * bs, bs);
    const BlockHash h = hash_block(parent, block_tokens, seed_);
    req.hashes.push_back(h);
    const int32_t b = req.table[i];
    if (!pool_.cache_block(b, h)) continue;  // same contents already cached elsewhere (or a collision)
    std::copy(block_tokens.begin(), block_tokens.end(), cached_tokens_.begin() + ptrdiff_t(size_t(b) * bs));
    cached_parent_[size_t(b)] = parent;
  }
}

void KvCacheManager::free(uint64_t id) {
  auto it = requests_.find(id);
  if (it == requests_.end()) return;
  std::vector<int32_t> reversed(it->second.table.rbegin(), it->second.table.rend());
  pool_.free(reversed);
  requests_.erase(it);
}

std::span<const int32_t> KvCacheManager::block_table(uint64_t id) const {
  auto it = requests_.find(id);
  if (it == requests_.end()) return {};
  return it->second.table;
}

int KvCacheManager::n_cached_tokens(uint64_t id) const {
  auto it = requests_.find(id);
  return it == requests_.end() ? 0 : it->second.n_cached_tokens;
}

}  // namespace cai
