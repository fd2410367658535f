// The staged Communicator: device → host → device through each device's stream; in place where the host addresses
// a device's memory. Also what every Communicator shares: collective names, byte counters, rank checks.
#include <algorithm>
#include <cstring>
#include <map>

#include "core/log.h"

#include "hal/collective.h"

namespace cai::hal {

const char* collective_name(Collective c) {
  switch (c) {
    case Collective::kSendRecv: return "send_recv";
    case Collective::kAllReduce: return "all_reduce";
    case Collective::kCount: break;
  }
  return "?";
}

uint64_t Communicator::bytes_moved() const {
  uint64_t n = 0;
  for (uint64_t b : bytes_) n += b;
  return n;
}

int Communicator::rank_of(const Device& d) const {
  const auto it = std::find(devices_.begin(), devices_.end(), &d);
  return it == devices_.end() ? -1 : static_cast<int>(it - devices_.begin());
}

Status Communicator::check_send_recv(int from, int to) const {
  if (from < 0 || from >= size() || to < 0 || to >= size())
    return invalid_argument("send_recv: ranks {} → {} outside a group of {}", from, to, size());
  return {};
}

Status Communicator::check_all_reduce(const std::vector<int>& ranks, size_t n_bufs) const {
  if (ranks.size() != n_bufs || ranks.empty())
    return invalid_argument("all_reduce_sum: {} ranks, {} buffers", ranks.size(), n_bufs);
  for (int r : ranks)
    if (r < 0 || r >= size()) return invalid_argument("all_reduce_sum: rank {} outside a group of {}", r, size());
  return {};
}

namespace {

class StagedCommunicator final : public Communicator {
 public:
  explicit StagedCommunicator(std::vector<Device*> devices) : Communicator(std::move(devices)) {}

  Status send_recv(int from, const void* src, int to, void* dst, size_t n) override {
    CAI_TRY(check_send_recv(from, to));
    if (from == to || n == 0) return {};
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
    CAI_TRY(check_all_reduce(ranks, bufs.size()));
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

 private:
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
      CAI_LOG_WARN("all-reduce over {}: the backend's collective did not start ({}); staging through the host", names,
                   made.status().message());
    else if ((slot = std::move(*made)))
      CAI_LOG_INFO("all-reduce over {}: {}", names, slot->library());
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
