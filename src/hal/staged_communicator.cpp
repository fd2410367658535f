// The staged Communicator: device → host → device through each device's stream; in place where the host addresses
// a device's memory.
#include <algorithm>
#include <cstring>

#include "hal/collective.h"

namespace cai::hal {

int Communicator::rank_of(const Device& d) const {
  const auto it = std::find(devices_.begin(), devices_.end(), &d);
  return it == devices_.end() ? -1 : static_cast<int>(it - devices_.begin());
}

namespace {

class StagedCommunicator final : public Communicator {
 public:
  explicit StagedCommunicator(std::vector<Device*> devices) : Communicator(std::move(devices)) {}

  Status send_recv(int from, const void* src, int to, void* dst, size_t n) override {
    if (from < 0 || from >= size() || to < 0 || to >= size())
      return invalid_argument("send_recv: ranks {} → {} outside a group of {}", from, to, size());
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
    count(n);
    return {};
  }

 private:
  std::vector<uint8_t> staging_;
};

}  // namespace

Result<std::unique_ptr<Communicator>> make_staged_communicator(std::vector<Device*> devices) {
  if (devices.empty()) return invalid_argument("a communicator needs at least one device");
  for (size_t i = 0; i < devices.size(); ++i)
    for (size_t j = 0; j < i; ++j)
      if (devices[i] == devices[j]) return invalid_argument("device {} appears twice in a communicator", devices[i]->name());
  return std::unique_ptr<Communicator>(new StagedCommunicator(std::move(devices)));
}

}  // namespace cai::hal
