// CaseTensors: uploads, read-backs and the first failure of a built-in op check.
#include "doctor/case_tensors.h"

#include <cstring>

#include "core/quant.h"

namespace cai::doctor {

void CaseTensors::fail(Status st) {
  if (status_.ok()) status_ = std::move(st);
}

void* CaseTensors::upload(const void* src, size_t n) {
  Result<hal::Buffer> b = device_->allocate(n);
  if (!b.ok()) {
    fail(b.status());
    return nullptr;
  }
  if (Status st = device_->default_stream().copy_to_device(b->data(), src, n); !st.ok()) fail(std::move(st));
  buffers_.push_back(std::move(*b));
  return buffers_.back().data();
}

TensorView CaseTensors::put_bytes(void* data, size_t n_bytes, DType dtype, std::initializer_list<int64_t> shape,
                                  const float* scale, size_t n_scales) {
  TensorView v = TensorView::make(data, dtype, shape);
  if (v.n_bytes() != n_bytes)
    fail(internal_error("a check's {} tensor {} needs {} bytes, its data has {}", dtype_name(dtype), v.shape_string(),
                        v.n_bytes(), n_bytes));
  if (!device_ || device_->host_visible()) {
    v.scale = scale;
    return v;
  }
  v.data = upload(data, v.n_bytes());
  v.device = device_;
  if (scale) v.scale = static_cast<const float*>(upload(scale, n_scales * sizeof(float)));
  return v;
}

std::vector<float> CaseTensors::get(const TensorView& v) {
  std::vector<float> out(static_cast<size_t>(v.n_elements()));
  std::vector<uint8_t> raw(v.n_bytes());
  if (!v.data) return out;  // its upload failed (kept in status())
  if (!device_ || device_->host_visible()) {
    std::memcpy(raw.data(), v.data, raw.size());
  } else if (Status st = device_->default_stream().copy_to_host(raw.data(), v.data, raw.size()); !st.ok()) {
    fail(std::move(st));
    return out;
  }
  dequantize_row(v.dtype, raw.data(), out.data(), v.n_elements());
  return out;
}

}  // namespace cai::doctor
