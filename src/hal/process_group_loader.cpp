// join_process_group: finds out whether mpirun launched this process with others, and if so loads libcai-mpi.so
// (next to the binary, or lib/cai/ in the installed layout) and joins the job; the group's deadline and failure state.
#include <dlfcn.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <mutex>

#include "hal/process_group.h"

namespace cai::hal {

namespace {

namespace fs = std::filesystem;

using JoinFn = ProcessGroup* (*)(int*, char***, char*, size_t);

ProcessGroup*& joined() {
  static ProcessGroup* group = nullptr;
  return group;
}

// The job size the launcher announces (Open MPI, then PMI / PMIx launchers such as MPICH's and Slurm's); 1 if none.
int launched_size() {
  for (const char* var : {"OMPI_COMM_WORLD_SIZE", "PMI_SIZE", "PMIX_SIZE"})
    if (const char* v = std::getenv(var)) return std::max(1, std::atoi(v));
  return 1;
}

}  // namespace

ProcessGroup* process_group() { return joined(); }

void leave_process_group() {
  delete joined();
  joined() = nullptr;
}

namespace {

std::atomic<double> timeout_s{30.0};
std::mutex failure_mu;
std::string failure;

}  // namespace

void set_collective_timeout(double seconds) { timeout_s = seconds; }
double collective_timeout() { return timeout_s; }
Result<bool> same_on_ranks(ProcessGroup& group, const std::string& text, const std::vector<int>& ranks,
                           double timeout_s) {
  std::array<char, 64> mine{};
  std::strncpy(mine.data(), text.c_str(), mine.size() - 1);
  std::vector<std::array<char, 64>> all(ranks.size());
  if (!group.all_gather(mine.data(), all.data(), mine.size(), ranks, timeout_s))
    return unavailable("{}", group.error());
  return mine[0] != 0 && std::all_of(all.begin(), all.end(), [&](const auto& other) { return other == mine; });
}

double startup_timeout() { return std::max(600.0, collective_timeout()); }

std::string group_failure() {
  std::lock_guard lock(failure_mu);
  return failure;
}

void set_group_failure(const std::string& what) {
  std::lock_guard lock(failure_mu);
  if (failure.empty()) failure = what;
}

Result<ProcessGroup*> join_process_group(int* argc, char*** argv) {
  if (joined() || launched_size() <= 1) return joined();
  std::error_code ec;
  const fs::path exe = fs::read_symlink("/proc/self/exe", ec);
  std::string tried;
  void* handle = nullptr;
  for (const fs::path& dir : {exe.parent_path(), exe.parent_path().parent_path() / "lib" / "cai"}) {
    const fs::path lib = dir / "libcai-mpi.so";
    if (!fs::exists(lib, ec)) continue;
    if ((handle = dlopen(lib.c_str(), RTLD_NOW | RTLD_LOCAL))) break;
    tried += fmt::format(" {}: {};", lib.string(), dlerror());
  }
  if (!handle)
    return unavailable(
        "launched as one of {} MPI ranks, but libcai-mpi.so did not load ({}): build CAI with an MPI "
        "library installed (libopenmpi-dev) and run it where that library is installed",
        launched_size(), tried.empty() ? " not found beside " + exe.string() : tried);
  const auto join = reinterpret_cast<JoinFn>(dlsym(handle, "cai_mpi_join"));
  if (!join) return unavailable("libcai-mpi.so has no cai_mpi_join: it is not this build's");
  char err[512] = {};
  joined() = join(argc, argv, err, sizeof err);
  if (!joined()) return unavailable("joining the MPI job: {}", err);
  return joined();
}

}  // namespace cai::hal
