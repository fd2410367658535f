// resident_bytes from /proc/self/statm; lock_pages over mlock(2) with RLIMIT_MEMLOCK in the error.
#include "core/host_memory.h"

#include <sys/mman.h>
#include <sys/resource.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <fstream>

namespace cai {

size_t resident_bytes() {
  std::ifstream in("/proc/self/statm");
  size_t total_pages = 0, resident_pages = 0;
  if (!(in >> total_pages >> resident_pages)) return 0;
  return resident_pages * static_cast<size_t>(::sysconf(_SC_PAGESIZE));
}

Status lock_pages(const void* p, size_t n, std::string_view what) {
  if (n == 0 || ::mlock(p, n) == 0) return {};
  const int err = errno;
  rlimit lim{};
  ::getrlimit(RLIMIT_MEMLOCK, &lim);
  const std::string limit = lim.rlim_cur == RLIM_INFINITY ? "unlimited" : std::to_string(lim.rlim_cur) + " bytes";
  return out_of_memory("--mlock: cannot lock {} in RAM: {} (RLIMIT_MEMLOCK is {}; raise it with `ulimit -l`, "
                       "LimitMEMLOCK= in systemd or --ulimit memlock= in docker, or run without --mlock)",
                       what, std::strerror(err), limit);
}

}  // namespace cai
