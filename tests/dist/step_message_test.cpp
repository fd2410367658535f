// StepMessage: a batch survives the trip as integers (block tables cut to what each sequence uses), and truncated or
// inconsistent messages are refused.
#include "dist/step_message.h"

#include <gtest/gtest.h>

namespace cai::dist {
namespace {

struct Fixture {
  std::vector<int32_t> table_a{7, 3, 9, 99}, table_b{4};  // 99: past what sequence a uses
  StepBatch batch;
  Fixture() {
    batch.tokens = {11, 12, 13, 14};
    batch.positions = {0, 1, 2, 8};
    batch.slots = {28, 29, 30, 16};
    batch.logit_rows = {2, 3};
    batch.seqs = {{0, 3, 9, table_a.data()}, {3, 1, 0, table_b.data()}};  // a: positions 9..11 → 3 blocks of 4
  }
};

TEST(StepMessage, RoundTrip) {
  Fixture f;
  const std::vector<int32_t> ints = encode_step(f.batch, 4);
  Result<DecodedStep> d = decode_step(ints, 4);
  ASSERT_TRUE(d.ok()) << d.status().to_string();
  EXPECT_EQ(d->batch.tokens, f.batch.tokens);
  EXPECT_EQ(d->batch.positions, f.batch.positions);
  EXPECT_EQ(d->batch.slots, f.batch.slots);
  EXPECT_EQ(d->batch.logit_rows, f.batch.logit_rows);
  ASSERT_EQ(d->batch.seqs.size(), 2u);
  EXPECT_EQ(d->batch.seqs[0].q_begin, 0);
  EXPECT_EQ(d->batch.seqs[0].n_q, 3);
  EXPECT_EQ(d->batch.seqs[0].pos0, 9);
  EXPECT_EQ(std::vector<int32_t>(d->batch.seqs[0].block_table, d->batch.seqs[0].block_table + 3),
            (std::vector<int32_t>{7, 3, 9}));
  EXPECT_EQ(d->batch.seqs[1].block_table[0], 4);
  const DecodedStep moved = std::move(*d);  // the tables travel with the batch
  EXPECT_EQ(moved.batch.seqs[0].block_table[2], 9);
}

TEST(StepMessage, TruncatedOrInconsistentMessagesAreCorrupt) {
  Fixture f;
  const std::vector<int32_t> ints = encode_step(f.batch, 4);
  for (size_t n = 0; n < ints.size(); ++n) {
    const std::vector<int32_t> cut(ints.begin(), ints.begin() + static_cast<ptrdiff_t>(n));
    EXPECT_EQ(decode_step(cut, 4).status().code(), StatusCode::kCorrupt) << n << " integers";
  }
  std::vector<int32_t> longer = ints;
  longer.push_back(0);
  EXPECT_EQ(decode_step(longer, 4).status().code(), StatusCode::kCorrupt);
  EXPECT_EQ(decode_step(ints, 2).status().code(), StatusCode::kCorrupt);  // 3 blocks do not cover 12 positions of 2
  std::vector<int32_t> negative = ints;
  negative[0] = -1;
  EXPECT_EQ(decode_step(negative, 4).status().code(), StatusCode::kCorrupt);
}

}  // namespace
}  // namespace cai::dist
