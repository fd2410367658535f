// RemoteDevice: address-space reservations, ops that do nothing, and the exchange of device descriptions at start.
#include "hal/remote_device.h"

#include <sys/mman.h>

#include <algorithm>
#include <cstring>

#include "hal/completed_event.h"

namespace cai::hal {

namespace {

// Op functions of any signature that succeed without doing anything.
template <class Fn>
struct NoOp;
template <class... Args>
struct NoOp<Status (*)(Args...)> {
  static Status run(Args...) { return {}; }
};

template <class Fn>
void set_no_op(Fn& slot) {
  slot = &NoOp<Fn>::run;
}

OpTable no_op_table() {
  OpTable t;
#define CAI_OP_NO_OP(op, Id, params) set_no_op(t.op);
  CAI_HAL_OPS(CAI_OP_NO_OP)
#undef CAI_OP_NO_OP
  return t;
}

// Copies to or from a remote device's memory move nothing: the owning process holds the data.
class NoOpStream final : public Stream {
 public:
  Status copy_to_device(void*, const void*, size_t) override { return {}; }
  Status copy_to_host(void*, const void*, size_t) override { return {}; }
  Status synchronize() override { return {}; }
  std::unique_ptr<Event> record() override { return std::make_unique<CompletedEvent>(); }
};

template <size_t N>
void copy_text(char (&dst)[N], const std::string& src) {
  std::memset(dst, 0, N);
  std::memcpy(dst, src.data(), std::min(src.size(), N - 1));
}

}  // namespace

RemoteDevice::RemoteDevice(const DeviceInfo& info, int process, ProcessGroup& group)
    : info_(info), process_(process), group_(&group), stream_(std::make_unique<NoOpStream>()) {}

std::string RemoteDevice::name() const { return fmt::format("rank{}/{}", process_, info_.name); }

std::string RemoteDevice::description() const {
  return fmt::format("{} on {} (process rank {})", info_.description, info_.host, process_);
}

MemoryInfo RemoteDevice::memory_info() const {
  std::lock_guard lock(mu_);
  return {info_.total_bytes, info_.free_bytes - std::min<uint64_t>(info_.free_bytes, reserved_bytes_)};
}

const OpTable& RemoteDevice::ops() const {
  static const OpTable table = no_op_table();
  return table;
}

Stream& RemoteDevice::default_stream() { return *stream_; }

// Address space nobody may touch: a stray read or write of a remote tensor faults at once.
Result<Buffer> RemoteDevice::allocate(size_t n_bytes, MemoryKind kind) {
  const size_t n = std::max<size_t>(n_bytes, 1);
  void* p = mmap(nullptr, n, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  if (p == MAP_FAILED) return out_of_memory("{}: no address space for a stand-in of {} bytes", name(), n_bytes);
  std::lock_guard lock(mu_);
  reserved_[p] = n;
  reserved_bytes_ += n;
  return Buffer(this, p, n_bytes, kind);
}

void RemoteDevice::free(void* ptr, MemoryKind) {
  std::lock_guard lock(mu_);
  const auto it = reserved_.find(ptr);
  if (it == reserved_.end()) return;
  munmap(ptr, it->second);
  reserved_bytes_ -= it->second;
  reserved_.erase(it);
}

bool is_remote(const Device& d) { return dynamic_cast<const RemoteDevice*>(&d) != nullptr; }

bool host_addresses(const Device& d) {
  const auto* remote = dynamic_cast<const RemoteDevice*>(&d);
  return remote ? remote->info().host_visible != 0 : d.host_visible();
}

int owning_process(const Device& d, const ProcessGroup& group) {
  const auto* remote = dynamic_cast<const RemoteDevice*>(&d);
  return remote ? remote->process() : group.rank();
}

namespace {

DeviceInfo info_of(const Device& d, const ProcessGroup& group) {
  DeviceInfo info;
  copy_text(info.name, d.name());
  copy_text(info.description, d.description());
  copy_text(info.host, group.host());
  const MemoryInfo mem = d.memory_info();
  info.total_bytes = mem.total_bytes;
  info.free_bytes = mem.free_bytes;
  info.host_visible = d.host_visible();
  return info;
}

}  // namespace

Result<std::vector<Device*>> job_devices(ProcessGroup& group, const std::vector<Device*>& local, double timeout_s) {
  const int64_t k = static_cast<int64_t>(local.size());
  std::vector<int64_t> counts(static_cast<size_t>(group.size()));
  if (!group.all_gather(&k, counts.data(), sizeof k, every_rank(group), timeout_s))
    return unavailable("exchanging the ranks' devices: {}", group.error());
  for (int r = 0; r < group.size(); ++r)
    if (counts[static_cast<size_t>(r)] != counts[0])
      return invalid_argument("rank {} drives {} device(s), rank 0 {}: every rank of a job drives as many", r,
                              counts[static_cast<size_t>(r)], counts[0]);
  std::vector<DeviceInfo> mine;
  for (const Device* d : local) mine.push_back(info_of(*d, group));
  std::vector<DeviceInfo> all(static_cast<size_t>(group.size()) * local.size());
  if (!group.all_gather(mine.data(), all.data(), mine.size() * sizeof(DeviceInfo), every_rank(group), timeout_s))
    return unavailable("exchanging the ranks' devices: {}", group.error());
  static std::vector<std::unique_ptr<RemoteDevice>> stand_ins;  // for the process's life, as backends' devices are
  std::vector<Device*> out;
  for (int r = 0; r < group.size(); ++r) {
    for (size_t i = 0; i < local.size(); ++i) {
      if (r == group.rank()) {
        out.push_back(local[i]);
        continue;
      }
      stand_ins.push_back(std::make_unique<RemoteDevice>(all[static_cast<size_t>(r) * local.size() + i], r, group));
      out.push_back(stand_ins.back().get());
    }
  }
  return out;
}

}  // namespace cai::hal
