// Chained 64-bit hashes of full KV blocks: the identity of a block's contents for the prefix cache.
#pragma once

#include <cstdint>
#include <span>

namespace cai {

using BlockHash = uint64_t;

// Parent hash of a sequence's first block.
inline constexpr BlockHash kRootBlockHash = 0;

// hash(parent block hash, this block's token ids), mixed with `seed`. Every step goes through a bijective
// 64-bit finaliser, so the hash of block i depends on every token of blocks 0..i. A 64-bit hash alone may
// collide; the prefix cache therefore also compares the token ids and the parent hash of a hit (see
// KvCacheManager), so a false hit needs two different prefixes with equal chain hashes.
BlockHash hash_block(BlockHash parent, std::span<const int32_t> tokens, uint64_t seed);

}  // namespace cai
