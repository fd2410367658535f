// RecentLatencies: nearest-rank percentiles weighted by each observation's count, over a window that forgets old
// observations, and a cap on how many it keeps.
#include <gtest/gtest.h>

#include "server/recent_latencies.h"

namespace cai::server {
namespace {

TEST(RecentLatencies, PercentilesOfTheWindow) {
  RecentLatencies r(60);
  EXPECT_EQ(r.summary(0).count, 0u);
  for (int i = 1; i <= 100; ++i) r.observe(10, i / 100.0);  // 0.01 .. 1.00
  const LatencySummary s = r.summary(10);
  EXPECT_EQ(s.count, 100u);
  EXPECT_DOUBLE_EQ(s.p50, 0.50);
  EXPECT_DOUBLE_EQ(s.p90, 0.90);
  EXPECT_DOUBLE_EQ(s.p99, 0.99);
  EXPECT_DOUBLE_EQ(s.max, 1.00);
}

TEST(RecentLatencies, CountsWeighAndOldObservationsLeave) {
  RecentLatencies r(60);
  r.observe(0, 5.0);       // leaves the window at t = 60
  r.observe(30, 0.1, 98);  // 98 tokens at 0.1 s each
  r.observe(31, 0.2, 2);
  LatencySummary s = r.summary(50);
  EXPECT_EQ(s.count, 101u);
  EXPECT_DOUBLE_EQ(s.p50, 0.1);
  EXPECT_DOUBLE_EQ(s.p99, 0.2);
  EXPECT_DOUBLE_EQ(s.max, 5.0);
  s = r.summary(61);
  EXPECT_EQ(s.count, 100u);
  EXPECT_DOUBLE_EQ(s.max, 0.2);
  EXPECT_EQ(r.summary(200).count, 0u);
  r.observe(200, 1.0, 0);  // nothing observed
  EXPECT_EQ(r.summary(200).count, 0u);
}

TEST(RecentLatencies, KeepsAtMostItsCap) {
  RecentLatencies r(60, 3);
  for (int i = 0; i < 5; ++i) r.observe(1, i);
  const LatencySummary s = r.summary(1);
  EXPECT_EQ(s.count, 3u);
  EXPECT_DOUBLE_EQ(s.p50, 3);  // 2, 3, 4 remain
}

}  // namespace
}  // namespace cai::server
