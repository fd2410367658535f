// CaseTensors: where the tensors of a built-in op check live. Host vectors as they are for the reference and for
// devices the host addresses; on other devices, copies uploaded and read back through the device's stream as the
// engine does. The first failure (an allocation, a copy, a size that does not match) is kept and the check reports it.
#pragma once

#include <cstdint>
#include <initializer_list>
#include <string>
#include <vector>

#include "core/status.h"
#include "core/tensor_view.h"
#include "hal/hal.h"

namespace cai::doctor {

class CaseTensors {
 public:
  explicit CaseTensors(hal::Device* device) : device_(device) {}  // null: the host (the reference ops)

  // `host` as a tensor of `dtype` and `shape` (its bytes must be exactly that tensor's); `scale` the FP8 block scales.
  template <class T>
  TensorView put(std::vector<T>& host, DType dtype, std::initializer_list<int64_t> shape, const float* scale = nullptr,
                 size_t n_scales = 0) {
    return put_bytes(host.data(), host.size() * sizeof(T), dtype, shape, scale, n_scales);
  }
  TensorView f32(std::vector<float>& host, std::initializer_list<int64_t> shape) {
    return put(host, DType::kF32, shape);
  }
  TensorView i32(std::vector<int32_t>& host, std::initializer_list<int64_t> shape) {
    return put(host, DType::kI32, shape);
  }
  // The tensor's values on the host as floats (I32, F16, BF16 and quantized values converted).
  std::vector<float> get(const TensorView& v);
  // The first failure, or OK.
  const Status& status() const { return status_; }

 private:
  TensorView put_bytes(void* data, size_t n_bytes, DType dtype, std::initializer_list<int64_t> shape,
                       const float* scale, size_t n_scales);
  void* upload(const void* src, size_t n);
  void fail(Status st);

  hal::Device* device_;
  std::vector<hal::Buffer> buffers_;
  Status status_;
};

}  // namespace cai::doctor
