// Phase profiling: scopes add their time only while enabled, and with a fence (a device queue's synchronize) the work
// queued inside a phase is charged to it while the work queued before it is not.
#include "core/profile.h"

#include <gtest/gtest.h>

#include <chrono>
#include <thread>

namespace cai {
namespace {

using std::chrono::milliseconds;

// A stand-in for a device queue: work is "queued" as a duration and runs (sleeps) when the queue is drained.
struct FakeQueue {
  milliseconds pending{0};
  int drains = 0;
  void drain() {
    std::this_thread::sleep_for(pending);
    pending = milliseconds(0);
    ++drains;
  }
};

class ProfileTest : public ::testing::Test {
 protected:
  void TearDown() override {
    profile::set_enabled(false);
    profile::set_fence(nullptr);
    profile::reset();
  }
};

TEST_F(ProfileTest, DisabledScopesRecordNothingAndRunNoFence) {
  FakeQueue q;
  profile::reset();
  profile::set_fence([&q] { q.drain(); });
  { profile::Scope s("attention"); }
  EXPECT_TRUE(profile::snapshot().empty());
  EXPECT_EQ(q.drains, 0);
}

TEST_F(ProfileTest, FencedScopeIsChargedWithItsOwnQueuedWorkOnly) {
  FakeQueue q;
  profile::reset();
  profile::set_fence([&q] { q.drain(); });
  profile::set_enabled(true);
  q.pending = milliseconds(300);  // queued by an earlier phase, still running when this one starts
  {
    profile::Scope s("mlp");
    q.pending += milliseconds(40);  // queued inside the phase, drained at its end
  }
  EXPECT_EQ(q.drains, 2);
  const double mlp = profile::snapshot().at("mlp");
  EXPECT_GE(mlp, 0.040);
  EXPECT_LT(mlp, 0.300);
}

}  // namespace
}  // namespace cai
