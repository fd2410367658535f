// Workspace: named scratch tensors on the device, grown on demand and reused across forward steps.
#pragma once

#include <map>
#include <string>

#include "core/status.h"
#include "core/tensor_view.h"
#include "hal/hal.h"

namespace cai {

class Workspace {
 public:
  explicit Workspace(hal::Device& device) : device_(&device) {}
  // An F32 tensor of this shape under `name`; contents are undefined. Views stay valid until the next call
  // with the same name asks for more bytes.
  Result<TensorView> f32(const std::string& name, std::initializer_list<int64_t> shape) {
    return get(name, DType::kF32, shape);
  }
  Result<TensorView> get(const std::string& name, DType dtype, std::initializer_list<int64_t> shape);

 private:
  hal::Device* device_;
  std::map<std::string, hal::Buffer> buffers_;
};

}  // namespace cai
