// The devices a --device list means for this process: the list itself, or in an MPI job of N ranks driving K devices
// each (--devices-per-rank) the job's N·K devices, this rank's being its local rank's K entries of the list on its
// machine.
#include <unistd.h>

#include "core/log.h"
#include "hal/process_group.h"
#include "hal/remote_device.h"
#include "verbs.h"

namespace cai::cli {

namespace {

// This rank's devices from the list its machine's ranks share: the CPU for every rank when the list is the CPU alone,
// else the local rank's `per_rank` entries (a bare backend name lists all of that backend's devices).
Result<std::vector<hal::Device*>> local_devices(const hal::Registry& reg, const std::string& list, int per_rank,
                                                const hal::ProcessGroup& group) {
  std::vector<hal::Device*> devices;
  if (hal::Backend* b = reg.find_backend(list); b && list != "cpu") {
    devices = b->devices();
  } else {
    CAI_ASSIGN_OR_RETURN(devices, reg.find_devices(list));
  }
  if (devices.size() == 1 && names_only_cpu(list)) {
    if (per_rank != 1) return invalid_argument("--devices-per-rank {}: a process has one CPU (--device cpu)", per_rank);
    return devices;
  }
  const size_t first = static_cast<size_t>(group.local_rank()) * static_cast<size_t>(per_rank);
  if (first + static_cast<size_t>(per_rank) > devices.size())
    return invalid_argument(
        "rank {} is local rank {} on {}, but --device {} lists {} device(s) there: each process on "
        "a machine takes {} device(s) from the one at its local rank × {}",
        group.rank(), group.local_rank(), group.host(), list, devices.size(), per_rank, per_rank);
  return std::vector<hal::Device*>(devices.begin() + static_cast<ptrdiff_t>(first),
                                   devices.begin() + static_cast<ptrdiff_t>(first + static_cast<size_t>(per_rank)));
}

}  // namespace

Result<std::vector<hal::Device*>> job_device_list(const hal::Registry& reg, const std::string& list, int per_rank) {
  hal::ProcessGroup* group = hal::process_group();
  if (!group) {
    if (per_rank != 1) return invalid_argument("--devices-per-rank {} is for the ranks of an MPI job", per_rank);
    return reg.find_devices(list);
  }
  CAI_ASSIGN_OR_RETURN(const std::vector<hal::Device*> mine, local_devices(reg, list, per_rank, *group));
  CAI_LOG_INFO("rank {} of {} (pid {} on {}, {}): {} {}", group->rank(), group->size(), getpid(), group->host(),
               group->library(), mine.size() == 1 ? "device" : "devices", hal::device_names(mine));
  return hal::job_devices(*group, mine, hal::startup_timeout());
}

}  // namespace cai::cli
