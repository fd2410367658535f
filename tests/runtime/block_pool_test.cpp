// BlockPool and block hashing: ref counts, eviction order, prefix-cache hashes surviving until eviction.
#include "runtime/kv/block_pool.h"

#include <gtest/gtest.h>

#include <vector>

#include "runtime/kv/block_hash.h"

namespace cai {
namespace {

using Ids = std::vector<int32_t>;

TEST(BlockPool, AllocateFreeAndRefCounts) {
  BlockPool pool(8);
  EXPECT_EQ(pool.n_total(), 8);
  EXPECT_EQ(pool.n_free(), 8);
  auto a = pool.allocate(3);
  ASSERT_TRUE(a.has_value());
  EXPECT_EQ(*a, (Ids{0, 1, 2}));
  for (int32_t id : *a) EXPECT_EQ(pool.ref_count(id), 1);
  EXPECT_EQ(pool.n_free(), 5);
  EXPECT_EQ(pool.n_used(), 3);

  EXPECT_FALSE(pool.allocate(6).has_value());  // all-or-nothing
  EXPECT_EQ(pool.n_free(), 5);

  pool.incref(1);
  EXPECT_EQ(pool.ref_count(1), 2);
  pool.free(*a);
  EXPECT_EQ(pool.ref_count(0), 0);
  EXPECT_EQ(pool.ref_count(1), 1);
  EXPECT_EQ(pool.n_free(), 7);
  EXPECT_EQ(pool.free_list(), (Ids{3, 4, 5, 6, 7, 0, 2}));
  pool.free(Ids{1});
  EXPECT_EQ(pool.free_list(), (Ids{3, 4, 5, 6, 7, 0, 2, 1}));
  EXPECT_EQ(pool.n_used(), 0);
  EXPECT_TRUE(pool.allocate(0).has_value());
}

TEST(BlockPool, EvictsLeastRecentlyFreedFirst) {
  BlockPool pool(4);
  ASSERT_TRUE(pool.allocate(4).has_value());
  pool.free(Ids{2});
  pool.free(Ids{0});
  pool.free(Ids{3, 1});
  EXPECT_EQ(pool.free_list(), (Ids{2, 0, 3, 1}));
  auto b = pool.allocate(2);
  ASSERT_TRUE(b.has_value());
  EXPECT_EQ(*b, (Ids{2, 0}));
  EXPECT_EQ(pool.free_list(), (Ids{3, 1}));
}

TEST(BlockPool, CachedFreeBlockStaysAHitUntilReused) {
  BlockPool pool(2);
  auto a = pool.allocate(1);
  ASSERT_TRUE(a.has_value());
  ASSERT_EQ((*a)[0], 0);
  EXPECT_TRUE(pool.cache_block(0, 111));
  EXPECT_EQ(pool.lookup(111), 0);
  pool.free(Ids{0});
  EXPECT_EQ(pool.n_free(), 2);
  EXPECT_EQ(pool.lookup(111), 0);  // free but still cached
  EXPECT_EQ(pool.block_hash(0), BlockHash{111});

  pool.incref(0);  // a cache hit takes it back out of the free list
  EXPECT_EQ(pool.ref_count(0), 1);
  EXPECT_EQ(pool.free_list(), (Ids{1}));
  pool.free(Ids{0});
  EXPECT_EQ(pool.free_list(), (Ids{1, 0}));

  auto b = pool.allocate(1);
  ASSERT_TRUE(b.has_value());
  EXPECT_EQ((*b)[0], 1);  // the uncached block goes first; 0 is still a hit
  EXPECT_EQ(pool.lookup(111), 0);
  EXPECT_EQ(pool.n_evictions(), 0u);

  auto c = pool.allocate(1);
  ASSERT_TRUE(c.has_value());
  EXPECT_EQ((*c)[0], 0);  // reused for new data: the hash is gone
  EXPECT_FALSE(pool.lookup(111).has_value());
  EXPECT_FALSE(pool.block_hash(0).has_value());
  EXPECT_EQ(pool.n_evictions(), 1u);
  EXPECT_EQ(pool.n_cached(), 0);
}

TEST(BlockPool, OneBlockPerHash) {
  BlockPool pool(3);
  ASSERT_TRUE(pool.allocate(2).has_value());
  EXPECT_TRUE(pool.cache_block(0, 5));
  EXPECT_FALSE(pool.cache_block(1, 5));  // same hash already names block 0
  EXPECT_FALSE(pool.cache_block(0, 6));  // block 0 already has a hash
  EXPECT_EQ(pool.lookup(5), 0);
  EXPECT_FALSE(pool.lookup(6).has_value());
  EXPECT_FALSE(pool.block_hash(1).has_value());
  EXPECT_EQ(pool.n_cached(), 1);
}

TEST(BlockHash, DependsOnParentTokensOrderAndSeed) {
  const Ids t = {1, 2, 3, 4};
  const BlockHash h = hash_block(kRootBlockHash, t, 42);
  EXPECT_EQ(h, hash_block(kRootBlockHash, t, 42));
  EXPECT_NE(h, hash_block(h, t, 42));                             // same tokens, other parent
  EXPECT_NE(h, hash_block(kRootBlockHash, Ids{1, 2, 3, 5}, 42));  // one token differs
  EXPECT_NE(h, hash_block(kRootBlockHash, Ids{2, 1, 3, 4}, 42));  // order matters
  EXPECT_NE(h, hash_block(kRootBlockHash, t, 43));                // seeded
  EXPECT_NE(hash_block(kRootBlockHash, Ids{0}, 42), hash_block(kRootBlockHash, Ids{0, 0}, 42));
}

}  // namespace
}  // namespace cai
