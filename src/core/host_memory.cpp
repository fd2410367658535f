// resident_bytes from /proc/self/statm; lock_pages over mlock(2), checking RLIMIT_MEMLOCK first and naming it on
// failure.
#include "core/host_memory.h"

#include <sys/mman.h>
#include <sys/resource.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <string>

namespace cai {

size_t resident_bytes() {
  std::ifstream in("/proc/self/statm");
  size_t total_pages = 0, resident_pages = 0;
  if (!(in >> total_pages >> resident_pages)) return 0;
  return resident_pages * static_cast<size_t>(::sysconf(_SC_PAGESIZE));
}

namespace {

// What /proc/self/status says about locking: whether CAP_IPC_LOCK is effective (it lifts the limit) and how many
// bytes this process has locked already (they count against the limit).
struct LockState {
  bool cap_ipc_lock = false;
  size_t locked_bytes = 0;
};

LockState lock_state() {
  constexpr int kCapIpcLock = 14;  // linux/capability.h
  LockState s;
  std::ifstream in("/proc/self/status");
  for (std::string line; std::getline(in, line);) {
    if (line.rfind("CapEff:", 0) == 0) s.cap_ipc_lock = (std::stoull(line.substr(7), nullptr, 16) >> kCapIpcLock) & 1;
    if (line.rfind("VmLck:", 0) == 0) s.locked_bytes = std::stoull(line.substr(6)) * 1024;  // "VmLck:  N kB"
  }
  return s;
}

Status refuse_lock(std::string_view what, std::string_view why) {
  rlimit lim{};
  ::getrlimit(RLIMIT_MEMLOCK, &lim);
  const std::string limit = lim.rlim_cur == RLIM_INFINITY ? "unlimited" : std::to_string(lim.rlim_cur) + " bytes";
  return out_of_memory(
      "--mlock: cannot lock {} in RAM: {} (RLIMIT_MEMLOCK is {}; raise it with `ulimit -l`, "
      "LimitMEMLOCK= in systemd or --ulimit memlock= in docker, or run without --mlock)",
      what, why, limit);
}

}  // namespace

Status check_lockable(size_t n, std::string_view what) {
  rlimit lim{};
  ::getrlimit(RLIMIT_MEMLOCK, &lim);
  if (lim.rlim_cur == RLIM_INFINITY) return {};
  const LockState s = lock_state();
  if (s.cap_ipc_lock || s.locked_bytes + n <= lim.rlim_cur) return {};
  return refuse_lock(what,
                     fmt::format("{} more bytes would exceed the limit ({} are locked already)", n, s.locked_bytes));
}

Status lock_pages(const void* p, size_t n, std::string_view what) {
  if (n == 0 || ::mlock(p, n) == 0) return {};
  return refuse_lock(what, std::strerror(errno));
}

}  // namespace cai
