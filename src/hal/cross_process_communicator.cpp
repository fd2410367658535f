// The Communicator of a device group spread over the processes of an MPI job: an all-reduce or a transfer across
// processes through the devices' backend library where every process involved has the same one (NCCL across
// processes: a unique id sent over the group; each such operation watched by the CollectiveWatchdog), else through
// hal::ProcessGroup (host memory on the wire; a device's side staged through its stream); the rest through the staged
// communicator of this process's own devices.
#include <algorithm>
#include <cstring>
#include <functional>
#include <map>
#include <memory>

#include "core/log.h"

#include "hal/collective.h"
#include "hal/collective_watchdog.h"
#include "hal/process_group.h"
#include "hal/remote_device.h"

namespace cai::hal {

namespace {

class CrossProcessCommunicator final : public Communicator {
 public:
  CrossProcessCommunicator(std::vector<Device*> devices, ProcessGroup& group, std::unique_ptr<Communicator> local)
      : Communicator(std::move(devices)), group_(group), local_(std::move(local)) {}
  ~CrossProcessCommunicator() override { CollectiveWatchdog::global().forget(this); }

  Status send_recv(int from, const void* src, int to, void* dst, size_t n) override {
    CAI_TRY(check_send_recv(from, to));
    const int me = group_.rank(), src_proc = owner(from), dst_proc = owner(to);
    if (n == 0 || (src_proc != me && dst_proc != me)) return {};
    if (src_proc == me && dst_proc == me) return local_->send_recv(from, src, to, dst, n);
    CAI_TRY(check_group());
    // The two processes' library communicator, over the pair in rank order (an all-reduce over them shares it).
    const std::vector<int> pair = {std::min(from, to), std::max(from, to)};
    const int mine = owner(pair[0]) == me ? 0 : 1;
    Device& d = device(src_proc == me ? from : to);
    CAI_ASSIGN_OR_RETURN(NativeCollective * native, native_for(pair, {owner(pair[0]), owner(pair[1])}, mine, d));
    if (native && native->can_send_recv()) {
      const auto what = [this, native, from, to, send = src_proc == me] {
        return fmt::format("{} from {} to {} ({})", send ? "send" : "recv", device(from).name(), device(to).name(),
                           native->library());
      };
      CAI_TRY(watched(*native, d, what, [&] {
        return src_proc == me ? native->send(src, n, 1 - mine) : native->recv(dst, n, 1 - mine);
      }));
      count(Collective::kSendRecv, n);
      return {};
    }
    if (src_proc == me) {
      CAI_ASSIGN_OR_RETURN(const void* host, to_host(device(from), src, n));
      if (!group_.send(host, n, dst_proc, collective_timeout())) return failed();
    } else {
      Device& d = device(to);
      CAI_TRY(d.default_stream().synchronize());  // nothing queued may still read dst
      if (d.host_visible()) {
        if (!group_.recv(dst, n, src_proc, collective_timeout())) return failed();
      } else {
        staging_.resize(n);
        if (!group_.recv(staging_.data(), n, src_proc, collective_timeout())) return failed();
        CAI_TRY(d.default_stream().copy_to_device(dst, staging_.data(), n));
      }
    }
    count(Collective::kSendRecv, n);
    return {};
  }

  // One device in each process whose library brings them: through the library; else as Communicator builds them.
  Status all_gather(const std::vector<int>& ranks, const std::vector<void*>& bufs, size_t part) override {
    CAI_TRY(check_ranks("all_gather", ranks, bufs.size()));
    if (all_local(ranks)) return local_->all_gather(ranks, bufs, part);
    const Members m = members_of(ranks);
    if (m.here.empty() || part == 0) return {};
    CAI_ASSIGN_OR_RETURN(NativeCollective * native, gather_scatter_over(ranks, m));
    if (!native) return Communicator::all_gather(ranks, bufs, part);
    CAI_TRY(watched(ranks, *native, "all-gather", [&] { return native->all_gather({bufs[m.here.front()]}, part); }));
    count_all_gather(ranks.size(), part);
    return {};
  }

  Status reduce_scatter_sum(const std::vector<int>& ranks, const std::vector<float*>& bufs, size_t n) override {
    CAI_TRY(check_ranks("reduce_scatter_sum", ranks, bufs.size()));
    if (all_local(ranks)) return local_->reduce_scatter_sum(ranks, bufs, n);
    const Members m = members_of(ranks);
    if (m.here.empty() || n == 0) return {};
    CAI_ASSIGN_OR_RETURN(NativeCollective * native, gather_scatter_over(ranks, m));
    if (!native) return Communicator::reduce_scatter_sum(ranks, bufs, n);
    CAI_TRY(watched(ranks, *native, "reduce-scatter",
                    [&] { return native->reduce_scatter_sum({bufs[m.here.front()]}, n); }));
    count_reduce_scatter(ranks.size(), n);
    return {};
  }

  Status broadcast(const std::vector<int>& ranks, const std::vector<void*>& bufs, size_t n, int root) override {
    CAI_TRY(check_ranks("broadcast", ranks, bufs.size()));
    if (all_local(ranks)) return local_->broadcast(ranks, bufs, n, root);
    const Members m = members_of(ranks);
    if (m.here.empty() || n == 0) return {};
    CAI_ASSIGN_OR_RETURN(NativeCollective * native, gather_scatter_over(ranks, m));
    if (!native || root < 0 || static_cast<size_t>(root) >= ranks.size())
      return Communicator::broadcast(ranks, bufs, n, root);
    CAI_TRY(watched(ranks, *native, "broadcast", [&] { return native->broadcast({bufs[m.here.front()]}, n, root); }));
    count_broadcast(ranks.size(), n);
    return {};
  }

  Status all_to_all(const std::vector<int>& ranks, const std::vector<const void*>& send, const std::vector<void*>& recv,
                    const std::vector<uint64_t>& bytes) override {
    CAI_TRY(check_ranks("all_to_all", ranks, send.size()));
    if (all_local(ranks)) return local_->all_to_all(ranks, send, recv, bytes);
    const Members m = members_of(ranks);
    if (m.here.empty()) return {};
    CAI_ASSIGN_OR_RETURN(NativeCollective * native, gather_scatter_over(ranks, m));
    if (!native || recv.size() != ranks.size() || bytes.size() != ranks.size() * ranks.size())
      return Communicator::all_to_all(ranks, send, recv, bytes);
    const size_t mine = m.here.front();
    CAI_TRY(
        watched(ranks, *native, "all-to-all", [&] { return native->all_to_all({send[mine]}, {recv[mine]}, bytes); }));
    count_all_to_all(ranks.size(), bytes);
    return {};
  }

  // Across processes the backend library is chosen with the other processes at the first all-reduce over the ranks;
  // before it, and where they did not all have the same one, the group's all-gather.
  std::string all_reduce_path(const std::vector<int>& ranks) override {
    if (all_local(ranks)) return local_->all_reduce_path(ranks);
    const auto it = native_.find(ranks);
    return it != native_.end() && it->second ? it->second->library() : "MPI all-gather (" + group_.library() + ")";
  }

  Status all_reduce_sum(const std::vector<int>& ranks, const std::vector<float*>& bufs, size_t n) override {
    CAI_TRY(check_ranks("all_reduce_sum", ranks, bufs.size()));
    if (all_local(ranks)) return local_->all_reduce_sum(ranks, bufs, n);
    const Members m = members_of(ranks);
    if (m.here.empty() || n == 0) return {};  // this process holds none of the ranks
    CAI_TRY(check_group());
    const size_t bytes = n * sizeof(float), k = ranks.size();
    const std::vector<int>& procs = m.procs;
    const std::vector<size_t>& here = m.here;
    const std::vector<int>& members = m.members;
    CAI_ASSIGN_OR_RETURN(NativeCollective * native, library_over(ranks, m));
    if (native) {
      const size_t mine = here.front();
      CAI_TRY(watched(ranks, *native, "all-reduce", [&] { return native->all_reduce_sum({bufs[mine]}, n); }));
      count(Collective::kAllReduce, 2 * (k - 1) * bytes);
      return {};
    }
    // Through MPI: each process's buffers in host memory, in the ranks' order, gathered on every process taking part
    // (as many slots from each, the unused ones empty), then added in the order of the ranks, as one process adds.
    std::vector<size_t> slot(k);  // each rank's place among its process's ranks
    size_t slots = 0;
    for (int p : members) {
      size_t j = 0;
      for (size_t i = 0; i < k; ++i)
        if (procs[i] == p) slot[i] = j++;
      slots = std::max(slots, j);
    }
    packed_.assign(slots * n, 0.0f);
    for (size_t i : here) {
      CAI_ASSIGN_OR_RETURN(const void* host, to_host(device(ranks[i]), bufs[i], bytes));
      std::memcpy(packed_.data() + slot[i] * n, host, bytes);
    }
    gathered_.resize(members.size() * slots * n);
    if (!group_.all_gather(packed_.data(), gathered_.data(), slots * bytes, members, collective_timeout()))
      return failed();
    const auto part = [&](size_t i) {
      const size_t m = static_cast<size_t>(std::find(members.begin(), members.end(), procs[i]) - members.begin());
      return gathered_.data() + (m * slots + slot[i]) * n;
    };
    sum_.assign(part(0), part(0) + n);
    for (size_t i = 1; i < k; ++i) {
      const float* p = part(i);
      for (size_t j = 0; j < n; ++j) sum_[j] += p[j];
    }
    for (size_t i : here) {
      Device& d = device(ranks[i]);
      if (d.host_visible())
        std::copy(sum_.begin(), sum_.end(), bufs[i]);
      else
        CAI_TRY(d.default_stream().copy_to_device(bufs[i], sum_.data(), bytes));
    }
    count(Collective::kAllReduce, 2 * (k - 1) * bytes);
    return {};
  }

 private:
  struct Members {
    std::vector<int> procs;    // each rank's process
    std::vector<size_t> here;  // the positions of this process's ranks
    std::vector<int> members;  // the processes taking part, once each
  };
  Members members_of(const std::vector<int>& ranks) const {
    Members m;
    for (size_t i = 0; i < ranks.size(); ++i) {
      m.procs.push_back(owner(ranks[i]));
      if (m.procs.back() == group_.rank()) m.here.push_back(i);
    }
    m.members = m.procs;
    std::sort(m.members.begin(), m.members.end());
    m.members.erase(std::unique(m.members.begin(), m.members.end()), m.members.end());
    return m;
  }
  // The processes' library over the ranks where each process holds one of them and all have the same library; null
  // where they do not (the group then goes through MPI).
  Result<NativeCollective*> library_over(const std::vector<int>& ranks, const Members& m) {
    if (m.members.size() != ranks.size()) return nullptr;
    CAI_TRY(check_group());
    const size_t mine = m.here.front();
    return native_for(ranks, m.procs, static_cast<int>(mine), device(ranks[mine]));
  }
  Result<NativeCollective*> gather_scatter_over(const std::vector<int>& ranks, const Members& m) {
    CAI_ASSIGN_OR_RETURN(NativeCollective * native, library_over(ranks, m));
    return native && native->can_gather_scatter() ? native : nullptr;
  }

  int owner(int rank) const { return owning_process(device(rank), group_); }
  std::string names(const std::vector<int>& ranks) const {
    std::vector<Device*> devices;
    for (int r : ranks) devices.push_back(&device(r));
    return device_names(devices);
  }

  // A collective of the library over `ranks` (this process's rank's device the first of them here), watched.
  Status watched(const std::vector<int>& ranks, NativeCollective& native, const char* kind,
                 const std::function<Status()>& call) {
    const std::vector<int>* key = &native_.find(ranks)->first;  // lives with the communicator, as the watch may
    const auto what = [this, &native, key, kind] {
      return std::string(kind) + " over " + names(*key) + " (" + native.library() + ")";
    };
    size_t mine = 0;
    while (owner(ranks[mine]) != group_.rank()) ++mine;
    return watched(native, device(ranks[mine]), what, call);
  }

  // `call` (an operation of `native` queued on d's stream) under the watchdog, from the call until d's stream passes
  // it: one still pending after the collective timeout is aborted and fails the group.
  Status watched(NativeCollective& native, Device& d, std::function<std::string()> what,
                 const std::function<Status()>& call) {
    CollectiveWatchdog& dog = CollectiveWatchdog::global();
    const uint64_t id = dog.arm(this, std::move(what), collective_timeout(), [&native](const std::string& why) {
      set_group_failure(why);
      native.abort();
    });
    Status st = call();
    if (!st.ok()) {
      dog.disarm(id);
      const Status group = check_group();  // an aborted call says why
      return group.ok() ? st : group;
    }
    std::shared_ptr<Event> passed = d.default_stream().record();
    dog.queued(id, [passed] { return passed->done(); });
    return {};
  }
  bool all_local(const std::vector<int>& ranks) const {
    return std::all_of(ranks.begin(), ranks.end(), [&](int r) { return owner(r) == group_.rank(); });
  }

  // The backend library's communicator over these ranks (one device in each of `procs`), made at their first
  // all-reduce: the processes show each other which library they have; where all name the same one, the first
  // process makes the unique id, every process receives it and joins. Null: not all have one, and the group stages.
  Result<NativeCollective*> native_for(const std::vector<int>& ranks, const std::vector<int>& procs, int mine,
                                       Device& d) {
    const auto it = native_.find(ranks);
    if (it != native_.end()) return it->second.get();
    std::unique_ptr<NativeCollective>& slot = native_[ranks];
    ProcessCollectives* pc = d.process_collectives();
    Result<bool> same = same_on_ranks(group_, pc ? pc->library() : "", procs, collective_timeout());
    if (!same.ok()) return failed();
    const std::string over = names(ranks);
    if (!*same) {
      CAI_LOG_INFO("collectives over {}: MPI ({}): not every process has the same collective library", over,
                   group_.library());
      return nullptr;
    }
    // The first process's id, after a byte that says whether it made one (if not, every process stages).
    const size_t id_bytes = pc->unique_id_bytes();
    std::vector<uint8_t> id(1 + id_bytes);
    if (mine == 0) {
      Result<std::vector<uint8_t>> made = pc->unique_id();
      if (made.ok() && made->size() == id_bytes) {
        id[0] = 1;
        std::copy(made->begin(), made->end(), id.begin() + 1);
      } else {
        CAI_LOG_WARN("collectives over {}: {} made no unique id ({}); staging through MPI", over, pc->library(),
                     made.ok() ? "wrong size" : made.status().message());
      }
    }
    std::vector<uint8_t> ids(procs.size() * id.size());
    if (!group_.all_gather(id.data(), ids.data(), id.size(), procs, collective_timeout())) return failed();
    if (ids[0] != 1) return nullptr;
    id.assign(ids.begin() + 1, ids.begin() + static_cast<ptrdiff_t>(1 + id_bytes));
    HostAllGather gather = [this, procs](const void* mine_bytes, void* all, size_t n) -> Status {
      if (!group_.all_gather(mine_bytes, all, n, procs, collective_timeout())) return failed();
      return {};
    };
    CAI_ASSIGN_OR_RETURN(slot, pc->join(id, static_cast<int>(procs.size()), mine, std::move(gather)));
    CAI_LOG_INFO("collectives over {}: {}", over, slot->library());
    return slot.get();
  }

  // src's n bytes readable by the host once earlier work on d is done: src itself where the host addresses d.
  Result<const void*> to_host(Device& d, const void* src, size_t n) {
    if (d.host_visible()) {
      CAI_TRY(d.default_stream().synchronize());
      return src;
    }
    staging_.resize(n);
    CAI_TRY(d.default_stream().copy_to_host(staging_.data(), src, n));
    return static_cast<const void*>(staging_.data());
  }

  Status check_group() const {
    const std::string failure = group_failure();
    if (failure.empty()) return {};
    return unavailable("the process group has failed: {}", failure);
  }
  Status failed() const {
    set_group_failure(group_.error());
    return unavailable("{}", group_.error());
  }

  ProcessGroup& group_;
  std::unique_ptr<Communicator> local_;
  std::vector<uint8_t> staging_;
  std::vector<float> packed_, gathered_, sum_;  // an all-reduce's buffers of this process, every process's, their sum
  std::map<std::vector<int>, std::unique_ptr<NativeCollective>> native_;  // null: the ranks stage
};

}  // namespace

Result<std::unique_ptr<Communicator>> make_communicator(std::vector<Device*> devices) {
  CAI_ASSIGN_OR_RETURN(std::unique_ptr<Communicator> local, make_staged_communicator(devices));
  const auto remote = std::find_if(devices.begin(), devices.end(), [](const Device* d) { return is_remote(*d); });
  if (remote == devices.end()) return local;
  ProcessGroup& group = static_cast<const RemoteDevice*>(*remote)->group();
  return std::unique_ptr<Communicator>(new CrossProcessCommunicator(std::move(devices), group, std::move(local)));
}

}  // namespace cai::hal
