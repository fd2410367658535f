// Helpers for the simt runtime tests: a fixture run at warp 32 and 64, and a typed device buffer.
#pragma once

#include <gtest/gtest.h>

#include <cstdlib>
#include <string>
#include <vector>

#include "hal/cuda/dialect.h"

namespace simt_test {

// Before any launch or allocation: 4 workers (blocks really run concurrently even on a small machine) and a 64 MiB
// device pool, unless the environment says otherwise.
inline const bool kEnvironment = [] {
  setenv("CAI_SIMT_THREADS", "4", 0);
  setenv("CAI_SIMT_MEMORY", "64MiB", 0);
  return true;
}();

// Each test runs once per warp width; the width is set before the test body and restored after.
class WarpTest : public ::testing::TestWithParam<int> {
 protected:
  void SetUp() override {
    previous_ = simt::warp_size();
    ASSERT_TRUE(simt::set_warp_size(GetParam()));
    ASSERT_EQ(gpuGetLastError(), gpuSuccess);
  }
  void TearDown() override { simt::set_warp_size(previous_); }
  int warp() const { return GetParam(); }

 private:
  int previous_ = 32;
};

inline std::string warp_name(const ::testing::TestParamInfo<int>& info) { return "warp" + std::to_string(info.param); }

// A device array of n values, uploaded from / downloaded to host vectors.
template <class T>
class DeviceBuffer {
 public:
  explicit DeviceBuffer(size_t n, T fill = T{}) : n_(n) {
    EXPECT_EQ(gpuMalloc(&ptr_, n * sizeof(T)), gpuSuccess);
    upload(std::vector<T>(n, fill));
  }
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;
  ~DeviceBuffer() { gpuFree(ptr_); }

  T* get() const { return ptr_; }
  void upload(const std::vector<T>& host) {
    EXPECT_EQ(gpuMemcpyAsync(ptr_, host.data(), n_ * sizeof(T), gpuMemcpyHostToDevice, nullptr), gpuSuccess);
  }
  std::vector<T> download() const {
    std::vector<T> host(n_);
    EXPECT_EQ(gpuMemcpyAsync(host.data(), ptr_, n_ * sizeof(T), gpuMemcpyDeviceToHost, nullptr), gpuSuccess);
    return host;
  }

 private:
  size_t n_;
  T* ptr_ = nullptr;
};

}  // namespace simt_test
