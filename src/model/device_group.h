// DeviceGroup: the devices one model runs on, each with its scratch workspace, and the communicator that moves
// activations between them (pipeline stage boundaries, routed experts on another device).
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "hal/collective.h"
#include "model/workspace.h"

namespace cai {

class DeviceGroup {
 public:
  // Errors: an empty list or a device named twice.
  static Result<DeviceGroup> create(const std::vector<hal::Device*>& devices);

  const std::vector<hal::Device*>& devices() const { return devices_; }
  hal::Device& primary() const { return *devices_.front(); }
  // The scratch of a device of the group.
  Workspace& ws(const hal::Device& d);
  // null where the group has one device.
  const hal::Communicator* communicator() const { return comm_.get(); }

  // `x` in `to`'s workspace tensor `name` (x itself where it is on `to` already).
  Result<TensorView> move_to(const TensorView& x, hal::Device& to, const std::string& name);
  // x on every device of `to` (workspace tensor `name` on the others), in one broadcast from x's device where it is
  // one of them, else from the first after a move there.
  Result<std::vector<TensorView>> broadcast(const TensorView& x, const std::vector<hal::Device*>& to,
                                            const std::string& name);
  // The F32 tensors ys (one per rank, on devices of the group, the same shape) all become their sum, added in the
  // order given. One tensor: nothing to do. A failed transfer is unavailable, as for copy().
  Status all_reduce(const std::vector<TensorView>& ys);
  // src's bytes into dst, two tensors of the same size on devices of the group. A failed transfer is unavailable
  // naming both devices: the server ends that step's requests with 503 and goes on.
  Status copy(const TensorView& src, const TensorView& dst);

 private:
  std::vector<hal::Device*> devices_;
  std::vector<std::unique_ptr<Workspace>> ws_;  // by rank
  std::unique_ptr<hal::Communicator> comm_;
};

}  // namespace cai
