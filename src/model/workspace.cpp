// Workspace buffers.
#include "model/workspace.h"

namespace cai {

Result<TensorView> Workspace::f32(const std::string& name, std::initializer_list<int64_t> shape) {
  TensorView v = TensorView::make(nullptr, DType::kF32, shape);
  hal::Buffer& buf = buffers_[name];
  if (buf.size() < v.n_bytes()) {
    buf.reset();
    CAI_ASSIGN_OR_RETURN(buf, device_->allocate(v.n_bytes() + v.n_bytes() / 4));
  }
  v.data = buf.data();
  v.device = device_;
  return v;
}

}  // namespace cai
