// The collective watchdog: an operation still pending after its deadline is aborted once, with the reason; one whose
// stream passed it, or that was disarmed or forgotten, is not.
#include "hal/collective_watchdog.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <string>
#include <thread>

namespace cai::hal {
namespace {

// Waits up to 5 s for `cond`.
template <class F>
bool eventually(F cond) {
  for (int i = 0; i < 500 && !cond(); ++i) std::this_thread::sleep_for(std::chrono::milliseconds(10));
  return cond();
}

TEST(CollectiveWatchdog, AbortsAnOperationPastItsDeadlineOnce) {
  CollectiveWatchdog& dog = CollectiveWatchdog::global();
  const uint64_t before = dog.n_aborted();
  std::atomic<int> aborts{0};
  std::string why;
  const int owner = 0;
  const uint64_t id = dog.arm(
      &owner, [] { return std::string("all-reduce over a,b (test)"); }, 0.05,
      [&](const std::string& w) {
        why = w;
        ++aborts;
      });
  dog.queued(id, [] { return false; });  // the stream never passes it
  ASSERT_TRUE(eventually([&] { return aborts.load() == 1; }));
  EXPECT_EQ(why, "all-reduce over a,b (test) did not complete within 0.05 s (a peer died or stopped); aborted it");
  std::this_thread::sleep_for(std::chrono::milliseconds(100));
  EXPECT_EQ(aborts.load(), 1);
  EXPECT_EQ(dog.n_aborted(), before + 1);
}

TEST(CollectiveWatchdog, LeavesCompletedDisarmedAndForgottenOperations) {
  CollectiveWatchdog& dog = CollectiveWatchdog::global();
  std::atomic<int> aborts{0};
  const auto abort = [&](const std::string&) { ++aborts; };
  const int owner = 0, other = 0;
  std::atomic<bool> passed{false};
  const auto what = [] { return std::string("an operation"); };
  const uint64_t done = dog.arm(&owner, what, 0.2, abort);
  dog.queued(done, [&] { return passed.load(); });
  passed = true;
  const uint64_t failed_call = dog.arm(&owner, what, 0.2, abort);
  dog.disarm(failed_call);
  dog.arm(&other, what, 0.2, abort);
  dog.forget(&other);
  std::this_thread::sleep_for(std::chrono::milliseconds(400));
  EXPECT_EQ(aborts.load(), 0);
}

}  // namespace
}  // namespace cai::hal
