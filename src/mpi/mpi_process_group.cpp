// libcai-mpi.so: hal::ProcessGroup over MPI. Every operation is non-blocking MPI polled against its deadline, so a
// peer that died or hangs becomes an error naming it instead of a hang; errors return (MPI_ERRORS_RETURN) rather than
// abort. The step broadcasts use MPI_COMM_WORLD, the model's transfers a duplicate of it (sends and all-gathers under
// tags of their own), so no message matches another kind's.
#include <dlfcn.h>
#include <mpi.h>
#include <sched.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <string>
#include <thread>

#include "hal/process_group.h"

namespace {

using Clock = std::chrono::steady_clock;

std::string mpi_error(int code) {
  char text[MPI_MAX_ERROR_STRING];
  int len = 0;
  MPI_Error_string(code, text, &len);
  return std::string(text, static_cast<size_t>(len));
}

std::string rank_list(const std::vector<int>& ranks, int except) {
  std::string out;
  for (int r : ranks)
    if (r != except) out += (out.empty() ? "" : ", ") + std::to_string(r);
  return out;
}

class MpiProcessGroup final : public cai::hal::ProcessGroup {
 public:
  static constexpr int kSendTag = 0, kGatherTag = 1;

  MpiProcessGroup() {
    MPI_Comm_rank(MPI_COMM_WORLD, &rank_);
    MPI_Comm_size(MPI_COMM_WORLD, &size_);
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    MPI_Comm_dup(MPI_COMM_WORLD, &transfers_);
    MPI_Comm_set_errhandler(transfers_, MPI_ERRORS_RETURN);
    MPI_Comm node;
    MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, rank_, MPI_INFO_NULL, &node);
    MPI_Comm_rank(node, &local_rank_);
    MPI_Comm_free(&node);
    char name[MPI_MAX_PROCESSOR_NAME];
    int len = 0;
    MPI_Get_processor_name(name, &len);
    host_.assign(name, static_cast<size_t>(len));
    char version[MPI_MAX_LIBRARY_VERSION_STRING];
    MPI_Get_library_version(version, &len);
    library_ = std::string(version, static_cast<size_t>(len));
    if (const size_t cut = library_.find(','); cut != std::string::npos) library_.resize(cut);
    parent_ = getppid();
  }
  ~MpiProcessGroup() override {
    MPI_Comm_free(&transfers_);
    MPI_Finalize();
  }

  int rank() const override { return rank_; }
  int size() const override { return size_; }
  int local_rank() const override { return local_rank_; }
  std::string host() const override { return host_; }
  std::string library() const override { return library_; }
  std::string error() const override { return error_; }
  void interrupt(const std::string& why) override {
    std::lock_guard lock(interrupt_mu_);
    interrupt_why_ = why;
    ++interrupts_;
  }

  bool broadcast(void* buf, size_t n, int root, double timeout_s) override {
    MPI_Request req;
    if (!started(MPI_Ibcast(buf, static_cast<int>(n), MPI_BYTE, root, MPI_COMM_WORLD, &req), "broadcast")) return false;
    return finish(
        req, timeout_s, [&] { return "a broadcast from rank " + std::to_string(root); },
        [&] { return rank_list(cai::hal::every_rank(*this), rank_); });
  }

  // Pairwise: each member sends its bytes to every other member and receives theirs (point-to-point requests can be
  // abandoned at a deadline, where creating a sub-communicator would block).
  bool all_gather(const void* mine, void* all, size_t n, const std::vector<int>& ranks, double timeout_s) override {
    std::vector<MPI_Request> reqs;
    std::vector<int> peers;  // each request's
    for (size_t i = 0; i < ranks.size(); ++i) {
      char* slot = static_cast<char*>(all) + i * n;
      if (ranks[i] == rank_) {
        std::memcpy(slot, mine, n);
        continue;
      }
      for (bool receive : {true, false}) {
        reqs.emplace_back();
        peers.push_back(ranks[i]);
        const int rc =
            receive ? MPI_Irecv(slot, static_cast<int>(n), MPI_BYTE, ranks[i], kGatherTag, transfers_, &reqs.back())
                    : MPI_Isend(mine, static_cast<int>(n), MPI_BYTE, ranks[i], kGatherTag, transfers_, &reqs.back());
        if (!started(rc, "all-gather")) return false;
      }
    }
    for (size_t i = 0; i < reqs.size(); ++i)
      if (!finish(
              reqs[i], timeout_s, [&] { return "an all-gather over ranks " + rank_list(ranks, -1); },
              [&] { return std::to_string(peers[i]); }))
        return false;
    return true;
  }

  bool send(const void* buf, size_t n, int to, double timeout_s) override {
    MPI_Request req;
    if (!started(MPI_Isend(buf, static_cast<int>(n), MPI_BYTE, to, kSendTag, transfers_, &req), "send")) return false;
    return finish(
        req, timeout_s, [&] { return "a send to rank " + std::to_string(to); }, [&] { return std::to_string(to); });
  }

  bool recv(void* buf, size_t n, int from, double timeout_s) override {
    MPI_Request req;
    if (!started(MPI_Irecv(buf, static_cast<int>(n), MPI_BYTE, from, kSendTag, transfers_, &req), "receive"))
      return false;
    return finish(
        req, timeout_s, [&] { return "a receive from rank " + std::to_string(from); },
        [&] { return std::to_string(from); });
  }

  [[noreturn]] void abort(int code) override {
    MPI_Abort(MPI_COMM_WORLD, code);
    std::_Exit(code);
  }

 private:
  bool started(int rc, const char* what) {
    if (rc == MPI_SUCCESS) return true;
    error_ = std::string(what) + ": " + mpi_error(rc);
    return false;
  }

  // Polls req until it completes, the deadline passes, or (no deadline) the process that launched this one is gone.
  // what() describes the operation and peers() the ranks it waits for; both run only to word an error (a collective
  // that succeeds builds no string).
  template <class What, class Peers>
  bool finish(MPI_Request& req, double timeout_s, const What& what, const Peers& peers) {
    const Clock::time_point start = Clock::now();
    const uint64_t interrupts_at_start = interrupts_;
    for (int polls = 0;; ++polls) {
      int done = 0;
      const int rc = MPI_Test(&req, &done, MPI_STATUS_IGNORE);
      if (rc != MPI_SUCCESS) {
        error_ = what() + " failed: " + mpi_error(rc);
        return false;
      }
      if (done) return true;
      if (interrupts_ != interrupts_at_start) {
        std::lock_guard lock(interrupt_mu_);
        error_ = what() + ": " + interrupt_why_;
        return false;
      }
      const double waited = std::chrono::duration<double>(Clock::now() - start).count();
      if (timeout_s >= 0 && waited > timeout_s) {
        error_ = what() + ": rank " + peers() + " did not answer within " + fmt_seconds(timeout_s);
        return false;
      }
      if (timeout_s < 0 && getppid() != parent_) {
        error_ = what() + ": the launcher exited";
        return false;
      }
      // Spin briefly (a tensor-parallel all-reduce is usually microseconds away), then yield the core.
      if (polls > 20000)
        std::this_thread::sleep_for(std::chrono::microseconds(polls > 200000 ? 1000 : 50));
      else if (polls > 200)
        sched_yield();
    }
  }

  static std::string fmt_seconds(double s) {
    char text[32];
    std::snprintf(text, sizeof text, "%.1f s", s);
    return text;
  }

  int rank_ = 0, size_ = 1, local_rank_ = 0;
  pid_t parent_ = 0;
  std::string host_, library_, error_;
  std::atomic<uint64_t> interrupts_{0};
  std::mutex interrupt_mu_;
  std::string interrupt_why_;
  MPI_Comm transfers_ = MPI_COMM_NULL;
};

}  // namespace

// The library's one entry point (looked up by join_process_group). null with a message in err on failure.
extern "C" __attribute__((visibility("default"))) cai::hal::ProcessGroup* cai_mpi_join(int* argc, char*** argv,
                                                                                       char* err, size_t err_len) {
  // Open MPI's own components are loaded by libmpi and need its symbols global, which a library opened RTLD_LOCAL
  // (as this one is) does not give them.
  if (!dlopen("libmpi.so.40", RTLD_NOW | RTLD_GLOBAL | RTLD_NOLOAD))
    dlopen("libmpi.so", RTLD_NOW | RTLD_GLOBAL | RTLD_NOLOAD);
  int provided = 0;
  const int rc = MPI_Init_thread(argc, argv, MPI_THREAD_SERIALIZED, &provided);
  if (rc != MPI_SUCCESS) {
    std::snprintf(err, err_len, "MPI_Init_thread: %s", mpi_error(rc).c_str());
    return nullptr;
  }
  if (provided < MPI_THREAD_SERIALIZED) {
    std::snprintf(err, err_len, "MPI gives thread level %d; CAI calls it from several threads (one at a time)",
                  provided);
    MPI_Finalize();
    return nullptr;
  }
  return new MpiProcessGroup();
}
