// The staged Communicator: device → host → device through each device's stream; in place where the host addresses
// a device's memory. Collectives over devices of one backend with a library run through it.
#include <algorithm>
#include <cstring>
#include <map>

#include "core/log.h"

#include "hal/collective.h"

namespace cai::hal {

namespace {

class StagedCommunicator final : public Communicator {
 public:
  explicit StagedCommunicator(std::vector<Device*> devices) : Communicator(std::move(devices)) {}

  Status send_recv(int from, const void* src, int to, void* dst, size_t n) override {
    CAI_TRY(check_send_recv(from, to));
    if (n == 0 || src == dst) return {};
    if (from == to) return copy_within(device(from), src, dst, n);
    Device& s = device(from);
    Device& d = device(to);
    if (s.host_visible()) {
      CAI_TRY(s.default_stream().synchronize());  // queued work on host-visible memory must land first
      if (d.host_visible())
        std::memcpy(dst, src, n);
      else
        CAI_TRY(d.default_stream().copy_to_device(dst, src, n));
    } else if (d.host_visible()) {
      CAI_TRY(d.default_stream().synchronize());  // nothing queued may still read dst
      CAI_TRY(s.default_stream().copy_to_host(dst, src, n));
    } else {
      if (staging_.size() < n) staging_.resize(n);
      CAI_TRY(s.default_stream().copy_to_host(staging_.data(), src, n));
      CAI_TRY(d.default_stream().copy_to_device(dst, staging_.data(), n));  // may reuse staging once it returns
    }
    count(Collective::kSendRecv, n);
    return {};
  }

  std::string all_reduce_path(const std::vector<int>& ranks) override {
    NativeCollective* native = native_for(ranks);
    return native ? native->library() : "staged";
  }

  Status all_reduce_sum(const std::vector<int>& ranks, const std::vector<float*>& bufs, size_t n) override {
    CAI_TRY(check_ranks("all_reduce_sum", ranks, bufs.size()));
    if (ranks.size() == 1 || n == 0) return {};
    const size_t bytes = n * sizeof(float);
    if (NativeCollective* native = native_for(ranks)) {
      CAI_TRY(native->all_reduce_sum(bufs, n));
      count(Collective::kAllReduce, 2 * (ranks.size() - 1) * bytes);
      return {};
    }
    sum_.resize(n);  // the first rank's values, then each next rank's added
    part_.resize(n);
    for (size_t i = 0; i < ranks.size(); ++i) {  // rank order: the first buffer, then each next one added to it
      Device& d = device(ranks[i]);
      const float* src = bufs[i];
      if (d.host_visible()) {
        CAI_TRY(d.default_stream().synchronize());
      } else {
        CAI_TRY(d.default_stream().copy_to_host(part_.data(), bufs[i], bytes));
        src = part_.data();
      }
      if (i == 0)
        std::copy(src, src + n, sum_.begin());
      else
        for (size_t j = 0; j < n; ++j) sum_[j] += src[j];
    }
    for (size_t i = 0; i < ranks.size(); ++i) {
      Device& d = device(ranks[i]);
      if (d.host_visible())
        std::copy(sum_.begin(), sum_.end(), bufs[i]);
      else
        CAI_TRY(d.default_stream().copy_to_device(bufs[i], sum_.data(), bytes));
    }
    count(Collective::kAllReduce, 2 * (ranks.size() - 1) * bytes);
    return {};
  }

  Status all_gather(const std::vector<int>& ranks, const std::vector<void*>& bufs, size_t part) override {
    NativeCollective* native = gather_scatter_for(ranks, bufs.size());
    if (!native) return Communicator::all_gather(ranks, bufs, part);
    CAI_TRY(native->all_gather(bufs, part));
    count_all_gather(ranks.size(), part);
    return {};
  }

  Status reduce_scatter_sum(const std::vector<int>& ranks, const std::vector<float*>& bufs, size_t n) override {
    NativeCollective* native = gather_scatter_for(ranks, bufs.size());
    if (!native) return Communicator::reduce_scatter_sum(ranks, bufs, n);
    CAI_TRY(native->reduce_scatter_sum(bufs, n));
    count_reduce_scatter(ranks.size(), n);
    return {};
  }

  Status broadcast(const std::vector<int>& ranks, const std::vector<void*>& bufs, size_t n, int root) override {
    NativeCollective* native = gather_scatter_for(ranks, bufs.size());
    if (!native || root < 0 || static_cast<size_t>(root) >= ranks.size())
      return Communicator::broadcast(ranks, bufs, n, root);
    CAI_TRY(native->broadcast(bufs, n, root));
    count_broadcast(ranks.size(), n);
    return {};
  }

  Status all_to_all(const std::vector<int>& ranks, const std::vector<const void*>& send, const std::vector<void*>& recv,
                    const std::vector<uint64_t>& bytes) override {
    NativeCollective* native = gather_scatter_for(ranks, send.size());
    if (!native || recv.size() != ranks.size() || bytes.size() != ranks.size() * ranks.size())
      return Communicator::all_to_all(ranks, send, recv, bytes);
    CAI_TRY(native->all_to_all(send, recv, bytes));
    count_all_to_all(ranks.size(), bytes);
    return {};
  }

 private:
  // Within one device: in place where the host addresses it, else through host memory.
  Status copy_within(Device& d, const void* src, void* dst, size_t n) {
    if (d.host_visible()) {
      CAI_TRY(d.default_stream().synchronize());
      std::memmove(dst, src, n);
      return {};
    }
    if (staging_.size() < n) staging_.resize(n);
    CAI_TRY(d.default_stream().copy_to_host(staging_.data(), src, n));
    return d.default_stream().copy_to_device(dst, staging_.data(), n);
  }

  // The ranks' library where it brings the collectives beyond all-reduce; null where the caller's arguments are
  // wrong (the generic path names what) or the ranks stage.
  NativeCollective* gather_scatter_for(const std::vector<int>& ranks, size_t n_bufs) {
    if (!check_ranks("collective", ranks, n_bufs).ok() || ranks.size() == 1) return nullptr;
    NativeCollective* native = native_for(ranks);
    return native && native->can_gather_scatter() ? native : nullptr;
  }

  // The ranks' backend collective, created on first use (null: none, or it failed to start and the ranks stage).
  NativeCollective* native_for(const std::vector<int>& ranks) {
    const auto it = native_.find(ranks);
    if (it != native_.end()) return it->second.get();
    std::vector<Device*> group;
    for (int r : ranks) group.push_back(&device(r));
    const std::string names = device_names(group);
    Result<std::unique_ptr<NativeCollective>> made = group.front()->native_collective(group);
    std::unique_ptr<NativeCollective>& slot = native_[ranks];
    if (!made.ok())
      CAI_LOG_WARN("collectives over {}: the backend's library did not start ({}); staging through the host", names,
                   made.status().message());
    else if ((slot = std::move(*made)))
      CAI_LOG_INFO("collectives over {}: {}", names, slot->library());
    return slot.get();
  }

  std::vector<uint8_t> staging_;
  std::vector<float> sum_, part_;
  std::map<std::vector<int>, std::unique_ptr<NativeCollective>> native_;
};

}  // namespace

Result<std::unique_ptr<Communicator>> make_staged_communicator(std::vector<Device*> devices) {
  if (devices.empty()) return invalid_argument("a communicator needs at least one device");
  for (size_t i = 0; i < devices.size(); ++i)
    for (size_t j = 0; j < i; ++j)
      if (devices[i] == devices[j])
        return invalid_argument("device {} appears twice in a communicator", devices[i]->name());
  return std::unique_ptr<Communicator>(new StagedCommunicator(std::move(devices)));
}

}  // namespace cai::hal
