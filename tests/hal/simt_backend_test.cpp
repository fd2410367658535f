// The simt plugin (libcai-backend-simt.so) through the Registry: memory, copies, OOM as a Status, host pointers
// refused by ops, host-sync counting. The simt pool is capped at 64 MiB: CAI_SIMT_MEMORY is read once per process, so
// it is set before any test of this binary runs (others load the simt plugin too).
#include <gtest/gtest.h>

#include <cstdlib>
#include <numeric>
#include <vector>

#include "hal/hal.h"
#include "test_paths.h"

namespace cai::hal {
namespace {

constexpr size_t kCap = size_t{64} << 20;

class SimtMemoryCap : public ::testing::Environment {
 public:
  void SetUp() override { setenv("CAI_SIMT_MEMORY", "64MiB", 1); }
};
const auto* const kSimtMemoryCap = ::testing::AddGlobalTestEnvironment(new SimtMemoryCap);

class SimtBackend : public ::testing::Test {
 protected:
  void SetUp() override {
    Status st = registry_.load_plugin(test::binary_path("libcai-backend-simt.so"));
    ASSERT_TRUE(st.ok()) << st.to_string();
    Result<Device*> d = registry_.find_device("simt:0");
    ASSERT_TRUE(d.ok()) << d.status().to_string();
    device_ = *d;
  }

  Buffer upload(const std::vector<float>& values) {
    Result<Buffer> b = device_->allocate(values.size() * sizeof(float));
    EXPECT_TRUE(b.ok()) << b.status().to_string();
    Status st = device_->default_stream().copy_to_device(b->data(), values.data(), values.size() * sizeof(float));
    EXPECT_TRUE(st.ok()) << st.to_string();
    return std::move(b).value();
  }

  std::vector<float> download(const Buffer& b, size_t n) {
    std::vector<float> out(n);
    Status st = device_->default_stream().copy_to_host(out.data(), b.data(), n * sizeof(float));
    EXPECT_TRUE(st.ok()) << st.to_string();
    return out;
  }

  static TensorView f32(void* data, int64_t n) { return TensorView::make(data, DType::kF32, {n}); }

  Registry registry_;
  Device* device_ = nullptr;
};

TEST_F(SimtBackend, DescribesItself) {
  EXPECT_EQ(device_->name(), "simt:0");
  EXPECT_FALSE(device_->description().empty());
  EXPECT_FALSE(device_->host_visible());
  for (int op = 0; op < static_cast<int>(OpId::kCount); ++op)
    EXPECT_TRUE(device_->supports(static_cast<OpId>(op))) << op_name(static_cast<OpId>(op));
}

// 10 MiB crosses several 4 MiB staging chunks and wraps none of them twice.
TEST_F(SimtBackend, CopyRoundTrip) {
  std::vector<float> values(size_t{10} << 18);
  std::iota(values.begin(), values.end(), 0.0f);
  Buffer b = upload(values);
  EXPECT_EQ(download(b, values.size()), values);
}

TEST_F(SimtBackend, OutOfMemoryIsAStatus) {
  Result<Buffer> too_big = device_->allocate(kCap * 2);
  ASSERT_FALSE(too_big.ok());
  EXPECT_EQ(too_big.status().code(), StatusCode::kOutOfMemory);
  EXPECT_NE(too_big.status().message().find("simt:0"), std::string::npos) << too_big.status().message();
  // Not sticky: later allocations and ops work.
  Buffer a = upload({1, 2, 3, 4});
  ASSERT_TRUE(device_->ops().add(device_->op_context(), f32(a.data(), 4), f32(a.data(), 4), f32(a.data(), 4)).ok());
  EXPECT_EQ(download(a, 4), (std::vector<float>{2, 4, 6, 8}));
}

TEST_F(SimtBackend, MemoryInfoReflectsTheCap) {
  const MemoryInfo before = device_->memory_info();
  EXPECT_EQ(before.total_bytes, kCap);
  Result<Buffer> b = device_->allocate(size_t{16} << 20);
  ASSERT_TRUE(b.ok());
  EXPECT_LE(device_->memory_info().free_bytes + (size_t{16} << 20), before.free_bytes);
}

TEST_F(SimtBackend, OpsRefuseHostPointers) {
  Buffer a = upload({1, 2}), out = upload({0, 0});
  std::vector<float> host = {5, 6};
  Status st = device_->ops().add(device_->op_context(), f32(a.data(), 2), f32(host.data(), 2), f32(out.data(), 2));
  EXPECT_EQ(st.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(st.message().find("add"), std::string::npos) << st.message();
  EXPECT_NE(st.message().find("'b'"), std::string::npos) << st.message();
  // A range running past the end of its allocation is refused too.
  st = device_->ops().add(device_->op_context(), f32(a.data(), 3), f32(a.data(), 3), f32(out.data(), 3));
  EXPECT_EQ(st.code(), StatusCode::kInvalidArgument);
}

TEST_F(SimtBackend, HostSyncsAreCounted) {
  Stream& s = device_->default_stream();
  const uint64_t base = s.n_host_syncs();
  Buffer a = upload({1, 2, 3});
  ASSERT_TRUE(device_->ops().add(device_->op_context(), f32(a.data(), 3), f32(a.data(), 3), f32(a.data(), 3)).ok());
  EXPECT_EQ(s.n_host_syncs(), base);
  EXPECT_EQ(download(a, 3), (std::vector<float>{2, 4, 6}));
  EXPECT_EQ(s.n_host_syncs(), base + 1);
  ASSERT_TRUE(s.synchronize().ok());
  std::unique_ptr<Event> e = s.record();
  ASSERT_TRUE(e->wait().ok());
  EXPECT_TRUE(e->done());
  EXPECT_EQ(s.n_host_syncs(), base + 3);
}

}  // namespace
}  // namespace cai::hal
