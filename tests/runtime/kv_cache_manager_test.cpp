// KvCacheManager: block tables, slots, prefix hits (capped, exact), free order and allocation accounting.
#include "runtime/kv/kv_cache_manager.h"

#include <gtest/gtest.h>

#include <numeric>
#include <vector>

#include "runtime_test_util.h"

namespace cai {
namespace {

using test::Ids;
using test::iota_tokens;

Ids table_of(const KvCacheManager& kv, uint64_t id) {
  auto t = kv.block_table(id);
  return Ids(t.begin(), t.end());
}

TEST(KvCacheManager, GrowsTablesAndMapsSlots) {
  KvCacheManager kv(10, 4, true);
  ASSERT_TRUE(kv.allocate_slots(9, 8));  // takes blocks 0, 1
  kv.free(9);                            // tail first: the free list ends 1, 0
  EXPECT_EQ(kv.pool().free_list(), (Ids{2, 3, 4, 5, 6, 7, 8, 9, 1, 0}));
  EXPECT_FALSE(kv.has(9));

  ASSERT_TRUE(kv.allocate_slots(1, 5));
  EXPECT_EQ(table_of(kv, 1), (Ids{2, 3}));
  ASSERT_TRUE(kv.allocate_slots(1, 8));  // still fits in two blocks
  EXPECT_EQ(table_of(kv, 1), (Ids{2, 3}));
  ASSERT_TRUE(kv.allocate_slots(1, 9));
  EXPECT_EQ(table_of(kv, 1), (Ids{2, 3, 4}));
  EXPECT_EQ(kv.slot(1, 0), 8);
  EXPECT_EQ(kv.slot(1, 5), 13);  // block 3, offset 1
  EXPECT_EQ(kv.slot(1, 8), 16);  // block 4, offset 0
  EXPECT_EQ(kv_slot(table_of(kv, 1), 4, 7), 15);
  EXPECT_EQ(kv.n_cached_tokens(1), 0);
}

TEST(KvCacheManager, FailedAllocationChangesNothing) {
  KvCacheManager kv(4, 4, true);
  ASSERT_TRUE(kv.allocate_slots(1, 12));
  EXPECT_FALSE(kv.allocate_slots(2, 8));
  EXPECT_FALSE(kv.has(2));
  EXPECT_FALSE(kv.allocate_slots(1, 17));
  EXPECT_EQ(table_of(kv, 1).size(), 3u);
  EXPECT_EQ(kv.pool().n_free(), 1);
}

TEST(KvCacheManager, SecondRequestReusesSharedPrefix) {
  KvCacheManager kv(10, 4, true);
  const Ids a = iota_tokens(14);  // 3 full blocks + 2 tokens
  EXPECT_EQ(kv.get_computed_blocks(a).n_tokens, 0);
  ASSERT_TRUE(kv.allocate_slots(1, 14));
  kv.cache_full_blocks(1, a, 14);
  EXPECT_EQ(kv.pool().n_cached(), 3);  // the partial block is never cached

  Ids b(a.begin(), a.begin() + 12);
  for (int32_t t : {100, 101, 102, 103, 104}) b.push_back(t);
  const ComputedPrefix hit = kv.get_computed_blocks(b);
  EXPECT_EQ(hit.n_tokens, 12);
  const Ids a_table = table_of(kv, 1);
  EXPECT_EQ(hit.blocks, Ids(a_table.begin(), a_table.begin() + 3));
  ASSERT_TRUE(kv.allocate_slots(2, 17, hit));
  const Ids b_table = table_of(kv, 2);
  ASSERT_EQ(b_table.size(), 5u);
  for (int i = 0; i < 3; ++i) {
    EXPECT_EQ(b_table[size_t(i)], a_table[size_t(i)]);
    EXPECT_EQ(kv.pool().ref_count(b_table[size_t(i)]), 2);
  }
  EXPECT_EQ(kv.n_cached_tokens(2), 12);

  // A different token in block 1 keeps only block 0.
  Ids c = a;
  c[5] = 999;
  EXPECT_EQ(kv.get_computed_blocks(c).n_tokens, 4);
}

TEST(KvCacheManager, HitLeavesOneTokenToCompute) {
  KvCacheManager kv(10, 4, true);
  const Ids a = iota_tokens(12);  // exactly 3 blocks
  ASSERT_TRUE(kv.allocate_slots(1, 12));
  kv.cache_full_blocks(1, a, 12);
  EXPECT_EQ(kv.pool().n_cached(), 3);
  EXPECT_EQ(kv.get_computed_blocks(a).n_tokens, 8);  // the last token must run for logits
  Ids longer = a;
  longer.push_back(12);
  EXPECT_EQ(kv.get_computed_blocks(longer).n_tokens, 12);
  EXPECT_EQ(kv.get_computed_blocks(Ids{0}).n_tokens, 0);
}

TEST(KvCacheManager, FreedPrefixHitsUntilEvicted) {
  KvCacheManager kv(4, 4, true);
  const Ids a = iota_tokens(12);
  ASSERT_TRUE(kv.allocate_slots(1, 12));
  const Ids a_table = table_of(kv, 1);
  kv.cache_full_blocks(1, a, 12);
  kv.free(1);
  EXPECT_EQ(kv.pool().n_free(), 4);
  Ids b = a;
  b.push_back(50);
  EXPECT_EQ(kv.get_computed_blocks(b).n_tokens, 12);  // freed blocks still hold the prefix

  // Three blocks in the free list are hits; taking them leaves one truly free block.
  Ids longer = iota_tokens(20);
  const ComputedPrefix hit = kv.get_computed_blocks(longer);
  ASSERT_EQ(hit.n_tokens, 12);
  EXPECT_FALSE(kv.allocate_slots(2, 20, hit));  // needs 2 new blocks, only 1 left after the hits
  EXPECT_TRUE(kv.allocate_slots(2, 16, hit));
  EXPECT_EQ(kv.pool().n_free(), 0);
  kv.free(2);

  // A request with other data takes all four blocks, evicting the prefix.
  ASSERT_TRUE(kv.allocate_slots(3, 16));
  kv.free(3);
  EXPECT_EQ(kv.get_computed_blocks(b).n_tokens, 0);
  EXPECT_EQ(kv.pool().n_cached(), 0);
}

TEST(KvCacheManager, TailIsEvictedBeforeHead) {
  KvCacheManager kv(6, 4, true);
  const Ids a = iota_tokens(13);
  ASSERT_TRUE(kv.allocate_slots(1, 13));
  const Ids a_table = table_of(kv, 1);  // {0, 1, 2, 3}
  kv.cache_full_blocks(1, a, 13);
  kv.free(1);
  EXPECT_EQ(kv.pool().free_list(), (Ids{4, 5, a_table[3], a_table[2], a_table[1], a_table[0]}));
  // Four new blocks: the two never-used ones, then the tail (partial block 3, then block 2).
  ASSERT_TRUE(kv.allocate_slots(2, 16));
  EXPECT_EQ(kv.get_computed_blocks(a).n_tokens, 8);  // blocks 0 and 1 of the prefix survive
}

TEST(KvCacheManager, OffCachesNothing) {
  KvCacheManager kv(10, 4, false);
  const Ids a = iota_tokens(14);
  ASSERT_TRUE(kv.allocate_slots(1, 14));
  kv.cache_full_blocks(1, a, 14);
  EXPECT_EQ(kv.pool().n_cached(), 0);
  EXPECT_EQ(kv.get_computed_blocks(a).n_tokens, 0);
}

TEST(KvCacheManager, DuplicateContentStaysUncachedAndUnshared) {
  KvCacheManager kv(10, 4, true);
  const Ids a = iota_tokens(9);
  ASSERT_TRUE(kv.allocate_slots(1, 9));
  ASSERT_TRUE(kv.allocate_slots(2, 9));  // both computed the same prompt before either was cached
  kv.cache_full_blocks(1, a, 9);
  kv.cache_full_blocks(2, a, 9);
  EXPECT_EQ(kv.pool().n_cached(), 2);
  for (int32_t b : table_of(kv, 2)) EXPECT_FALSE(kv.pool().block_hash(b).has_value());
  const Ids first = table_of(kv, 1);
  EXPECT_EQ(kv.get_computed_blocks(a).blocks, Ids(first.begin(), first.begin() + 2));
}

}  // namespace
}  // namespace cai
