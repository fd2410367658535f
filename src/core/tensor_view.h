// TensorView: a non-owning view of a tensor on some device: pointer + dtype + shape (outermost first).
#pragma once

#include <array>
#include <cstdint>
#include <string>

#include "core/dtype.h"

namespace cai {

namespace hal {
class Device;
}

// Shapes are in PyTorch order (outermost first): a weight is [out, in], rows are contiguous.
// GGUF `ne` is the reverse of this. Rows of quantized types hold whole blocks.
struct TensorView {
  void* data = nullptr;
  DType dtype = DType::kF32;
  int n_dims = 0;
  std::array<int64_t, 4> shape{1, 1, 1, 1};
  hal::Device* device = nullptr;  // nullptr = host memory
  // FP8 block-scaled weights: F32 [ceil(rows/128), ceil(cols/128)] multipliers (DeepSeek weight_scale_inv).
  const float* scale = nullptr;

  static TensorView make(void* data, DType dtype, std::initializer_list<int64_t> dims);
  // The same bytes under another shape with as many elements (CAI_CHECKed); device and scale are kept.
  TensorView reshaped(std::initializer_list<int64_t> dims) const;
  // Slice i of the outermost dimension (expert i of a stacked [E, rows, cols] weight), keeping device and scale
  // (FP8 block scales of stacked experts are consecutive [ceil(rows/128), ceil(cols/128)] matrices).
  TensorView slice(int64_t i) const;
  int64_t dim(int i) const { return shape[static_cast<size_t>(i < 0 ? n_dims + i : i)]; }
  int64_t n_elements() const;
  int64_t cols() const { return n_dims == 0 ? 1 : dim(-1); }                // innermost
  int64_t rows() const { return cols() == 0 ? 0 : n_elements() / cols(); }  // everything else
  size_t row_bytes() const { return cai::row_bytes(dtype, cols()); }
  size_t n_bytes() const { return row_bytes() * static_cast<size_t>(rows()); }
  template <class T = void>
  T* row(int64_t r) const {
    return reinterpret_cast<T*>(static_cast<uint8_t*>(data) + static_cast<size_t>(r) * row_bytes());
  }
  template <class T>
  T* as() const {
    return static_cast<T*>(data);
  }
  std::string shape_string() const;  // "[512, 128]"
};

}  // namespace cai
