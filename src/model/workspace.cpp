// Workspace buffers.
#include "model/workspace.h"

namespace cai {

Result<TensorView> Workspace::get(const std::string& name, DType dtype, std::initializer_list<int64_t> shape) {
  TensorView v = TensorView::make(nullptr, dtype, shape);
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
