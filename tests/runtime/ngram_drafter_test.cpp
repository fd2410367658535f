// Prompt lookup: the latest earlier match of the longest suffix that has one, up to k tokens after it.
#include <gtest/gtest.h>

#include "runtime/spec/ngram_drafter.h"

namespace cai {
namespace {

using Ids = std::vector<int32_t>;

TEST(NgramDraft, FollowsTheLatestMatchOfTheLongestSuffix) {
  //            0  1  2  3  4  5  6  7  8  9
  const Ids t = {5, 6, 7, 8, 1, 6, 7, 9, 2, 6, 7};
  EXPECT_EQ(ngram_draft(t, 3, 1, 3), (Ids{9, 2, 6}));  // "6 7" last seen at 5..6, followed by 9 2 6
  EXPECT_EQ(ngram_draft(t, 1, 1, 3), Ids{9});
  const Ids u = {5, 6, 7, 8, 1, 9, 7, 9, 2, 6, 7};
  EXPECT_EQ(ngram_draft(u, 2, 1, 3), (Ids{8, 1}));  // "6 7" only at 1..2; the 1-gram "7" at 6 is not tried first
  EXPECT_EQ(ngram_draft(u, 2, 1, 1), (Ids{9, 2}));  // with n = 1 only: "7" last seen at 6
}

TEST(NgramDraft, StopsAtTheSequenceEndAndFindsNothingWhereNothingRepeats) {
  EXPECT_EQ(ngram_draft(Ids{3, 4, 3}, 5, 1, 2), (Ids{4, 3}));  // the continuation runs into the suffix itself
  EXPECT_EQ(ngram_draft(Ids{1, 2, 3, 4}, 3, 1, 3), Ids{});
  EXPECT_EQ(ngram_draft(Ids{7}, 3, 1, 3), Ids{});
  EXPECT_EQ(ngram_draft(Ids{2, 2, 2}, 0, 1, 3), Ids{});
  EXPECT_EQ(ngram_draft(Ids{2, 2, 2}, 4, 1, 3), (Ids{2}));
  EXPECT_EQ(ngram_draft(Ids{1, 2, 9, 1, 2}, 2, 3, 4), Ids{});  // no 3-gram repeats
}

TEST(NgramDrafter, DraftsEachSequenceUpToItsMaximum) {
  NgramDrafter d(1, 2);
  const Ids a = {1, 2, 3, 1, 2}, b = {4, 4};
  const std::vector<DraftSeq> seqs = {{1, a, 4, 4, 0, {}, 2}, {2, b, 1, 1, 1, {}, 0}};
  Result<std::vector<Ids>> out = d.draft(seqs, nullptr);
  ASSERT_TRUE(out.ok());
  EXPECT_EQ((*out)[0], (Ids{3, 1}));
  EXPECT_EQ((*out)[1], Ids{});
  EXPECT_FALSE(d.needs_hidden());
}

}  // namespace
}  // namespace cai
