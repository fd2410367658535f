// The devices a --device list means for this process: the list itself, or in an MPI job of N ranks (one device per
// rank) the job's N devices, this rank's being its local rank's entry of the list on its machine.
#include <unistd.h>

#include "core/log.h"
#include "hal/process_group.h"
#include "hal/remote_device.h"
#include "verbs.h"

namespace cai::cli {

namespace {

// This rank's device from the list its machine's ranks share: the CPU for every rank when the list is the CPU alone,
// else the local rank's entry (a bare backend name lists all of that backend's devices).
Result<hal::Device*> local_device(const hal::Registry& reg, const std::string& list, const hal::ProcessGroup& group) {
  std::vector<hal::Device*> devices;
  if (hal::Backend* b = reg.find_backend(list); b && list != "cpu") {
    devices = b->devices();
  } else {
    CAI_ASSIGN_OR_RETURN(devices, reg.find_devices(list));
  }
  if (devices.size() == 1 && names_only_cpu(list)) return devices.front();
  const int local = group.local_rank();
  if (local >= static_cast<int>(devices.size()))
    return invalid_argument(
        "rank {} is local rank {} on {}, but --device {} lists {} device(s) there: each process on "
        "a machine takes the device at its local rank",
        group.rank(), local, group.host(), list, devices.size());
  return devices[static_cast<size_t>(local)];
}

}  // namespace

Result<std::vector<hal::Device*>> job_device_list(const hal::Registry& reg, const std::string& list) {
  hal::ProcessGroup* group = hal::process_group();
  if (!group) return reg.find_devices(list);
  CAI_ASSIGN_OR_RETURN(hal::Device * mine, local_device(reg, list, *group));
  CAI_LOG_INFO("rank {} of {} (pid {} on {}, {}): device {}", group->rank(), group->size(), getpid(), group->host(),
               group->library(), mine->name());
  return hal::job_devices(*group, *mine, hal::startup_timeout());
}

}  // namespace cai::cli
