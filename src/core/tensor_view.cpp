// TensorView helpers.
#include "core/tensor_view.h"

#include <fmt/format.h>

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
