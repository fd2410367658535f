// DeviceGroup: workspaces by rank and staged moves between the ranks' devices.
#include "model/device_group.h"

#include <algorithm>

#include "core/profile.h"

namespace cai {

Result<DeviceGroup> DeviceGroup::create(const std::vector<hal::Device*>& devices) {
  DeviceGroup g;
  CAI_ASSIGN_OR_RETURN(std::unique_ptr<hal::Communicator> comm, hal::make_communicator(devices));
  g.devices_ = devices;
  for (hal::Device* d : devices) g.ws_.push_back(std::make_unique<Workspace>(*d));
  if (devices.size() > 1) g.comm_ = std::move(comm);
  return g;
}

Workspace& DeviceGroup::ws(const hal::Device& d) {
  for (size_t r = 0; r < devices_.size(); ++r)
    if (devices_[r] == &d) return *ws_[r];
  CAI_CHECK(false, "device {} is not in the model's group", d.name());
  return *ws_.front();
}

Status DeviceGroup::copy(const TensorView& src, const TensorView& dst) {
  if (src.n_bytes() != dst.n_bytes())
    return invalid_argument("copy between devices: {} bytes into {}", src.n_bytes(), dst.n_bytes());
  if (!comm_) return internal_error("copy between devices in a group of one");
  const int from = comm_->rank_of(*src.device), to = comm_->rank_of(*dst.device);
  profile::Scope scope("transfer");
  const Status st = comm_->send_recv(from, src.data, to, dst.data, src.n_bytes());
  if (st.ok()) return st;
  return unavailable("moving {} bytes from {} to {}: {}", src.n_bytes(), src.device->name(), dst.device->name(),
                     st.message());
}

Status DeviceGroup::all_reduce(const std::vector<TensorView>& ys) {
  if (ys.size() <= 1) return {};
  if (!comm_) return internal_error("all-reduce in a group of one");
  std::vector<int> ranks;
  std::vector<float*> bufs;
  for (const TensorView& y : ys) {
    ranks.push_back(comm_->rank_of(*y.device));
    bufs.push_back(y.as<float>());
  }
  profile::Scope scope("transfer");
  const Status st = comm_->all_reduce_sum(ranks, bufs, static_cast<size_t>(ys.front().n_elements()));
  if (st.ok()) return st;
  return unavailable("all-reduce of {} bytes over {} devices: {}", ys.front().n_bytes(), ys.size(), st.message());
}

Result<std::vector<TensorView>> DeviceGroup::broadcast(const TensorView& x, const std::vector<hal::Device*>& to,
                                                       const std::string& name) {
  if (to.size() == 1) {
    CAI_ASSIGN_OR_RETURN(TensorView moved, move_to(x, *to.front(), name));
    return std::vector<TensorView>{moved};
  }
  if (!comm_) return internal_error("broadcast in a group of one");
  const auto at = std::find(to.begin(), to.end(), x.device);
  const int root = at == to.end() ? 0 : static_cast<int>(at - to.begin());
  std::vector<TensorView> out;
  std::vector<int> ranks;
  std::vector<void*> bufs;
  for (size_t r = 0; r < to.size(); ++r) {
    TensorView t = x;
    if (static_cast<int>(r) != root || x.device != to[r]) {
      CAI_ASSIGN_OR_RETURN(t, ws(*to[r]).get(name, x.dtype, {x.rows(), x.cols()}));
    }
    out.push_back(t);
    ranks.push_back(comm_->rank_of(*to[r]));
    bufs.push_back(t.data);
  }
  if (x.device != to[static_cast<size_t>(root)]) CAI_TRY(copy(x, out.front()));
  profile::Scope scope("transfer");
  const Status st = comm_->broadcast(ranks, bufs, x.n_bytes(), root);
  if (st.ok()) return out;
  return unavailable("broadcast of {} bytes from {} over {} devices: {}", x.n_bytes(),
                     to[static_cast<size_t>(root)]->name(), to.size(), st.message());
}

Result<TensorView> DeviceGroup::move_to(const TensorView& x, hal::Device& to, const std::string& name) {
  if (x.device == &to) return x;
  CAI_ASSIGN_OR_RETURN(TensorView dst, ws(to).get(name, x.dtype, {x.rows(), x.cols()}));
  CAI_TRY(copy(x, dst));
  return dst;
}

}  // namespace cai
