// A Scheduler for the scheduler tests (header-only: the test glob builds only *_test.cpp files).
#pragma once

#include <gtest/gtest.h>

#include <utility>

#include "runtime/sched/scheduler.h"

namespace cai::test {

inline Scheduler make_scheduler(int max_batch, int budget, int block_size, int n_blocks, bool prefix_caching = true) {
  Result<Scheduler> s = Scheduler::create({max_batch, budget, block_size, n_blocks, prefix_caching});
  EXPECT_TRUE(s.ok()) << s.status().to_string();
  return std::move(s).value();
}

}  // namespace cai::test
