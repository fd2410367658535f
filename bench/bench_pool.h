// The thread pool the kernel benchmarks share: one worker per hardware thread, made on first use.
#pragma once

#include "core/thread_pool.h"

inline cai::ThreadPool& bench_pool() {
  static cai::ThreadPool p(0);
  return p;
}
