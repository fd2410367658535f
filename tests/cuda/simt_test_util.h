// Test harness for the CUDA-dialect kernels on simt: device buffers, a growing Scratch, a Context, warp sweeps.
#pragma once

#include <gtest/gtest.h>

#include <cstring>
#include <functional>
#include <initializer_list>
#include <random>
#include <string>
#include <vector>

#include "core/quant.h"
#include "core/tensor_view.h"
#include "hal/cuda/kernels/launchers.h"

namespace cai::gpu::test {

// A Scratch that grows by free + allocate (after a stream sync, so no queued kernel still uses the old region).
class GrowingScratch final : public Scratch {
 public:
  explicit GrowingScratch(gpuStream_t stream) : stream_(stream) {}
  ~GrowingScratch() override {
    if (ptr_) gpuFree(ptr_);
  }
  GrowingScratch(const GrowingScratch&) = delete;
  GrowingScratch& operator=(const GrowingScratch&) = delete;

  void* get(size_t n_bytes, CaiError* err) override {
    if (n_bytes <= cap_ && ptr_) return ptr_;
    gpuStreamSynchronize(stream_);
    if (ptr_) gpuFree(ptr_);
    ptr_ = nullptr;
    cap_ = 0;
    if (gpuMalloc(&ptr_, n_bytes == 0 ? 256 : n_bytes) != gpuSuccess) {
      ptr_ = nullptr;
      fail(err, CAI_ERR_OUT_OF_MEMORY, "scratch: cannot allocate %zu bytes", n_bytes);
      return nullptr;
    }
    cap_ = n_bytes;
    return ptr_;
  }

 private:
  gpuStream_t stream_;
  void* ptr_ = nullptr;
  size_t cap_ = 0;
};

// One simt "device" for a test: a stream, a scratch, a Context and every buffer the test uploads (freed at the end).
class SimtDevice {
 public:
  explicit SimtDevice(int warp_size = 32) {
    gpuStreamCreate(&stream_);
    scratch_ = new GrowingScratch(stream_);
    ctx_.stream = stream_;
    ctx_.warp_size = warp_size;
    ctx_.n_sms = 4;
    ctx_.scratch = scratch_;
  }
  ~SimtDevice() {
    sync();
    for (void* p : buffers_) gpuFree(p);
    delete scratch_;
    gpuStreamDestroy(stream_);
  }
  SimtDevice(const SimtDevice&) = delete;
  SimtDevice& operator=(const SimtDevice&) = delete;

  Context& ctx() { return ctx_; }

  // n bytes of device memory, zero-filled (freed with the device).
  void* alloc(size_t n) {
    void* p = nullptr;
    EXPECT_EQ(gpuMalloc(&p, n == 0 ? 1 : n), gpuSuccess) << "gpuMalloc " << n;
    buffers_.push_back(p);
    gpuMemsetAsync(p, 0, n == 0 ? 1 : n, stream_);
    return p;
  }
  void* upload_bytes(const void* src, size_t n) {
    void* p = alloc(n);
    if (n) gpuMemcpyAsync(p, src, n, gpuMemcpyHostToDevice, stream_);
    sync();  // the source may be a temporary
    return p;
  }
  template <class T>
  T* upload(const std::vector<T>& v) {
    return static_cast<T*>(upload_bytes(v.data(), v.size() * sizeof(T)));
  }
  // Copies n elements of device memory back (waits for all queued work first).
  template <class T>
  std::vector<T> download(const void* src, size_t n) {
    std::vector<T> v(n);
    sync();
    if (n) gpuMemcpyAsync(v.data(), src, n * sizeof(T), gpuMemcpyDeviceToHost, stream_);
    sync();
    return v;
  }
  void sync() { EXPECT_EQ(gpuStreamSynchronize(stream_), gpuSuccess); }

  // A device tensor over existing device memory.
  static CaiTensor tensor(void* data, int dtype, std::initializer_list<int64_t> shape, const float* scale = nullptr) {
    CaiTensor t{};
    t.data = data;
    t.dtype = dtype;
    t.n_dims = static_cast<int32_t>(shape.size());
    for (int i = 0; i < 4; ++i) t.shape[i] = 1;
    int i = 0;
    for (int64_t d : shape) t.shape[i++] = d;
    t.scale = scale;
    return t;
  }
  // A fresh zeroed F32 device tensor.
  CaiTensor zeros_f32(std::initializer_list<int64_t> shape) {
    size_t n = 1;
    for (int64_t d : shape) n *= static_cast<size_t>(d);
    return tensor(alloc(n * sizeof(float)), CAI_DTYPE_F32, shape);
  }
  // Uploads a host TensorView (bytes, and for FP8 its block scales: one [ceil(rows/128), ceil(cols/128)] matrix per
  // outermost slice of a 3-D tensor).
  CaiTensor upload_tensor(const TensorView& host) {
    CaiTensor t{};
    t.data = upload_bytes(host.data, host.n_bytes());
    t.dtype = static_cast<int32_t>(host.dtype);
    t.n_dims = host.n_dims;
    for (int i = 0; i < 4; ++i) t.shape[i] = host.shape[static_cast<size_t>(i)];
    if (host.scale) {
      const int64_t mats = host.n_dims == 3 ? host.dim(0) : 1;
      const int64_t n = mats * ((host.dim(-2) + 127) / 128) * ((host.cols() + 127) / 128);
      t.scale = static_cast<const float*>(upload_bytes(host.scale, static_cast<size_t>(n) * sizeof(float)));
    }
    return t;
  }

 private:
  gpuStream_t stream_{};
  GrowingScratch* scratch_ = nullptr;
  Context ctx_;
  std::vector<void*> buffers_;
};

// Gaussian test data.
inline std::vector<float> gaussian(size_t n, std::mt19937& rng, float sd = 1.0f) {
  std::normal_distribution<float> dist(0.0f, sd);
  std::vector<float> v(n);
  for (auto& x : v) x = dist(rng);
  return v;
}

// The weight types of plugin ABI 2.0 (quantized by the reference quantizers in tests).
inline constexpr DType kBaseWeightTypes[] = {DType::kF32,  DType::kF16,  DType::kBF16, DType::kQ8_0,   DType::kQ4_0,
                                             DType::kQ4_K, DType::kQ5_K, DType::kQ6_K, DType::kF8_E4M3};

// The GGUF types added in plugin ABI 2.1. Most have no reference quantizer, so tests fill them with random blocks.
inline constexpr DType kAddedWeightTypes[] = {
    DType::kQ4_1,    DType::kQ5_0,  DType::kQ5_1,    DType::kQ2_K,   DType::kQ3_K,  DType::kIQ4_NL, DType::kIQ4_XS,
    DType::kIQ3_XXS, DType::kIQ3_S, DType::kIQ2_XXS, DType::kIQ2_XS, DType::kIQ2_S, DType::kIQ1_S,  DType::kIQ1_M};

inline bool is_added_type(DType t) { return t >= DType::kQ4_1 && t <= DType::kIQ1_M; }

// A small finite f16 (|x| in [2^-10, 2^-5)), random sign, so decoded weights stay O(1) and never inf/NaN.
inline uint16_t small_f16(std::mt19937& rng) {
  const uint32_t r = rng();
  return static_cast<uint16_t>(((r & 1u) << 15) | ((5u + (r >> 1) % 5u) << 10) | ((r >> 8) & 0x3FFu));
}

// Random bytes make valid blocks of every added type (any code, index or sign pattern decodes) once its f16 scale
// fields are finite: those are overwritten with small_f16. IQ1_M keeps its scale in the top nibbles of its four
// u16 scale words.
inline void fill_random_blocks(DType t, uint8_t* bytes, size_t n_bytes, std::mt19937& rng) {
  for (size_t i = 0; i < n_bytes; ++i) bytes[i] = static_cast<uint8_t>(rng());
  const auto put = [](uint8_t* p, uint16_t h) { std::memcpy(p, &h, 2); };
  const size_t bb = dtype_info(t).block_bytes;
  for (uint8_t* blk = bytes; blk < bytes + n_bytes; blk += bb) {
    switch (t) {
      case DType::kQ4_1:
      case DType::kQ5_1:
        put(blk, small_f16(rng));
        put(blk + 2, small_f16(rng));
        break;
      case DType::kQ2_K:
        put(blk + 80, small_f16(rng));
        put(blk + 82, small_f16(rng));
        break;
      case DType::kQ3_K: put(blk + 108, small_f16(rng)); break;
      case DType::kIQ1_M: {
        const uint16_t d = small_f16(rng);
        for (int k = 0; k < 4; ++k)  // byte 49 + 2k is the high byte of u16 word k
          blk[49 + 2 * k] = static_cast<uint8_t>((blk[49 + 2 * k] & 0x0F) | (((d >> (4 * k)) & 15) << 4));
        break;
      }
      default: put(blk, small_f16(rng)); break;  // the other added types start with their f16 d
    }
  }
}

// A host weight [rows, cols] or stacked [E, rows, cols] of any weight dtype, quantized from Gaussian values with the
// reference quantizers (random valid blocks for the added types); `scaled` adds FP8-style 128×128 block scales (one
// matrix per expert).
struct HostWeights {
  DType dtype = DType::kF32;
  std::vector<int64_t> shape;
  std::vector<uint8_t> bytes;
  std::vector<float> scale;
  TensorView view() {
    TensorView t;
    t.data = bytes.data();
    t.dtype = dtype;
    t.n_dims = static_cast<int>(shape.size());
    for (size_t i = 0; i < shape.size(); ++i) t.shape[i] = shape[i];
    if (!scale.empty()) t.scale = scale.data();
    return t;
  }
};

inline HostWeights make_weights(DType t, std::initializer_list<int64_t> shape, bool scaled, std::mt19937& rng) {
  HostWeights w{t, std::vector<int64_t>(shape), {}, {}};
  const int64_t cols = w.shape.back(), rows = w.shape[w.shape.size() - 2];
  const int64_t mats = w.shape.size() == 3 ? w.shape[0] : 1;
  const size_t rb = row_bytes(t, cols);
  w.bytes.resize(rb * static_cast<size_t>(mats * rows));
  if (is_added_type(t)) {
    fill_random_blocks(t, w.bytes.data(), w.bytes.size(), rng);
  } else {
    const auto src = gaussian(static_cast<size_t>(mats * rows * cols), rng, t == DType::kF8_E4M3 ? 100.0f : 1.0f);
    for (int64_t r = 0; r < mats * rows; ++r) {
      const Status st = quantize_row(t, src.data() + r * cols, w.bytes.data() + static_cast<size_t>(r) * rb, cols);
      EXPECT_TRUE(st.ok()) << st.to_string();
    }
  }
  if (scaled) {
    std::uniform_real_distribution<float> u(0.001f, 0.02f);
    w.scale.resize(static_cast<size_t>(mats * ((rows + 127) / 128) * ((cols + 127) / 128)));
    for (auto& s : w.scale) s = u(rng);
  }
  return w;
}

// A host F32 tensor view over v.
inline TensorView host_f32(std::vector<float>& v, std::initializer_list<int64_t> shape) {
  return TensorView::make(v.data(), DType::kF32, shape);
}

// Runs body once per emulated warp width (32, then 64) with a fresh SimtDevice whose Context matches it.
inline void for_each_warp(const std::function<void(SimtDevice&)>& body) {
  for (int warp : {32, 64}) {
    SCOPED_TRACE("warp " + std::to_string(warp));
    simt::set_warp_size(warp);
    SimtDevice dev(warp);
    body(dev);
  }
  simt::set_warp_size(32);
}

}  // namespace cai::gpu::test
