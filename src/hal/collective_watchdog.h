// CollectiveWatchdog: ends a vendor collective that hangs. A collective library's operation (NCCL's all-reduce, send,
// recv) is queued on a device stream and waits for its peers on the device, where no host deadline reaches: a peer
// that died or was stopped leaves it, and every later copy from that device, waiting forever. Each such operation is
// watched from its call until its stream has passed it; one still pending after its deadline is aborted through the
// library (ncclCommAbort), which makes it and the stream's waiters fail; the caller marks the process group failed, so
// the step's requests end with rank_failed and the job ends instead of hanging.
#pragma once

#include <cstdint>
#include <functional>
#include <string>

namespace cai::hal {

class CollectiveWatchdog {
 public:
  // The process's watchdog; its thread starts with the first watched operation.
  static CollectiveWatchdog& global();

  // Starts watching an operation about to be called, for `timeout_s`; `abort` ends it, given why (called on the
  // watchdog's thread, at most once, after the reason is logged). `owner` groups the operations of one communicator
  // for forget(); `what` names it ("all-reduce over rank0/cuda:0,rank1/cuda:0 (NCCL)"), called only when it hangs, so
  // that watching costs no string work on the hot path.
  uint64_t arm(const void* owner, std::function<std::string()> what, double timeout_s,
               std::function<void(const std::string&)> abort);
  // The call returned: the operation is done once `done` says so (polled on the watchdog's thread).
  void queued(uint64_t id, std::function<bool()> done);
  // The call failed, or completed where it returned: stop watching it.
  void disarm(uint64_t id);
  // Stops watching every operation of `owner` (before the communicator behind it goes); waits for an abort running.
  void forget(const void* owner);
  // Operations aborted so far.
  uint64_t n_aborted() const;

 private:
  CollectiveWatchdog() = default;
  void run();
};

}  // namespace cai::hal
