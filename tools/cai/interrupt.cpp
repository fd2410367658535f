// Ctrl-C as a flag: the handler only records the signal.
#include "interrupt.h"

#include <signal.h>

#include <atomic>

namespace cai::cli {

namespace {

std::atomic<bool> g_interrupted{false};
static_assert(std::atomic<bool>::is_always_lock_free, "the signal handler needs a lock-free flag");

void on_sigint(int) { g_interrupted.store(true); }

}  // namespace

void catch_interrupts() {
  struct sigaction sa {};
  sa.sa_handler = on_sigint;
  sigemptyset(&sa.sa_mask);
  sa.sa_flags = 0;  // no SA_RESTART: a blocking read of the terminal is interrupted
  sigaction(SIGINT, &sa, nullptr);
}

bool take_interrupt() { return g_interrupted.exchange(false); }

}  // namespace cai::cli
