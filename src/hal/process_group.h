// ProcessGroup: the processes of one MPI job (`mpirun -np N cai ...`) and the few operations CAI needs between them,
// each with a deadline. libcai-mpi.so implements it over MPI and is loaded at run time (join_process_group), so `cai`
// builds and runs single-process without an MPI library installed. The interface is header-only: the library depends
// on nothing of CAI's.
#pragma once

#include <cstddef>
#include <memory>
#include <string>
#include <vector>

#include "core/status.h"

namespace cai::hal {

class ProcessGroup {
 public:
  virtual ~ProcessGroup() = default;
  virtual int rank() const = 0;
  virtual int size() const = 0;
  // This process's place among the group's processes on its own machine (picks its device there).
  virtual int local_rank() const = 0;
  virtual std::string host() const = 0;     // this machine's name
  virtual std::string library() const = 0;  // "Open MPI v4.1.4"

  // Each waits at most timeout_s seconds (negative: without a deadline, until the peers answer or the job ends) and
  // returns false when the peers did not answer in time or MPI failed; error() then says which ranks and why.
  // `root`'s n bytes into every rank's buf.
  virtual bool broadcast(void* buf, size_t n, int root, double timeout_s) = 0;
  // mine (n bytes) from each of `ranks` (process ranks, in order; this one among them) into all, by position in ranks.
  virtual bool all_gather(const void* mine, void* all, size_t n, const std::vector<int>& ranks, double timeout_s) = 0;
  virtual bool send(const void* buf, size_t n, int to, double timeout_s) = 0;
  virtual bool recv(void* buf, size_t n, int from, double timeout_s) = 0;
  virtual std::string error() const = 0;
  // Makes the wait in progress, if any, return false at once, error() saying `why`. Safe from any thread.
  virtual void interrupt(const std::string& why) = 0;
  // Ends every process of the job with `code` (mpirun then exits non-zero).
  [[noreturn]] virtual void abort(int code) = 0;
};

// The group this process was launched in: null when it was not launched by mpirun (or is alone in its job). Loads
// libcai-mpi.so from the directory of the running binary and initialises MPI once; later calls return the same group.
// Errors: launched by mpirun with several ranks but the library or MPI itself is missing (names the file and why).
Result<ProcessGroup*> join_process_group(int* argc, char*** argv);
// The group joined before, or null.
ProcessGroup* process_group();
// Leaves the job (MPI_Finalize) if one was joined; process_group() is null afterwards.
void leave_process_group();

// Every rank of the group, in order.
inline std::vector<int> every_rank(const ProcessGroup& group) {
  std::vector<int> ranks;
  for (int r = 0; r < group.size(); ++r) ranks.push_back(r);
  return ranks;
}

// Whether every process of `ranks` (this one among them) holds the same `text` (its first 63 bytes): each shows the
// others its own. false without a text here. Errors: a peer that does not answer within timeout_s (unavailable,
// with the group's error()).
Result<bool> same_on_ranks(ProcessGroup& group, const std::string& text, const std::vector<int>& ranks,
                           double timeout_s);

// How long a transfer between processes may wait for its peers (--collective-timeout) before the group counts as
// failed. Default 30 s.
void set_collective_timeout(double seconds);
double collective_timeout();
// How long the exchanges of the job's start may wait: loading takes minutes on large models and ends at different
// times on different ranks. The larger of 10 minutes and collective_timeout().
double startup_timeout();
// The first failure of a transfer between processes ("rank 1 did not answer within 5.0 s"), or "" while none failed.
// After one, the group is broken: every later transfer fails at once with the same message, and the process should
// end its requests and exit non-zero so that an orchestrator restarts the whole group.
std::string group_failure();
void set_group_failure(const std::string& what);

}  // namespace cai::hal
