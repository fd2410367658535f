// TensorView helpers.
#include "core/tensor_view.h"

#include <fmt/format.h>

#include "core/status.h"
#include "core/weight_row.h"

namespace cai {

TensorView TensorView::make(void* data, DType dtype, std::initializer_list<int64_t> dims) {
  TensorView v;
  v.data = data;
  v.dtype = dtype;
  v.n_dims = static_cast<int>(dims.size());
  size_t i = 0;
  for (int64_t d : dims) v.shape[i++] = d;
  return v;
}

TensorView TensorView::reshaped(std::initializer_list<int64_t> dims) const {
  TensorView v = make(data, dtype, dims);
  CAI_CHECK(v.n_elements() == n_elements(), "reshape {} → {} changes the element count", shape_string(),
            v.shape_string());
  v.device = device;
  v.scale = scale;
  return v;
}

TensorView TensorView::slice(int64_t i) const {
  CAI_CHECK(n_dims >= 2 && i >= 0 && i < shape[0], "slice {} of {}", i, shape_string());
  TensorView v = *this;
  v.n_dims = n_dims - 1;
  for (int d = 0; d < 3; ++d) v.shape[static_cast<size_t>(d)] = d < v.n_dims ? shape[static_cast<size_t>(d + 1)] : 1;
  v.shape[3] = 1;
  const int64_t per = n_elements() / shape[0] / cols();  // rows of one slice
  v.data = static_cast<uint8_t*>(data) + static_cast<size_t>(i * per) * row_bytes();
  if (scale) {
    const int64_t blocks =
        (per + kFp8ScaleBlock - 1) / kFp8ScaleBlock * ((cols() + kFp8ScaleBlock - 1) / kFp8ScaleBlock);
    v.scale = scale + i * blocks;
  }
  return v;
}

int64_t TensorView::n_elements() const {
  int64_t n = 1;
  for (int i = 0; i < n_dims; ++i) n *= shape[static_cast<size_t>(i)];
  return n;
}

std::string TensorView::shape_string() const {
  std::string s = "[";
  for (int i = 0; i < n_dims; ++i) s += fmt::format("{}{}", i ? ", " : "", shape[static_cast<size_t>(i)]);
  return s + "]";
}

}  // namespace cai
