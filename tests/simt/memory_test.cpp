// simt device memory and atomics: the capped pool, device-pointer checks, copies, sets, and atomics across blocks.
#include <cstring>

#include "hal/cuda/simt/internal.h"
#include "simt_test_util.h"

namespace {

using simt_test::DeviceBuffer;

class MemoryTest : public simt_test::WarpTest {};

TEST_P(MemoryTest, CapPointerChecksAndRoundTrip) {
  size_t free0 = 0, total = 0;
  ASSERT_EQ(gpuMemGetInfo(&free0, &total), gpuSuccess);
  ASSERT_LE(free0, total);
  void* too_big = nullptr;
  EXPECT_EQ(gpuMalloc(&too_big, total + 1), gpuErrorMemoryAllocation);
  EXPECT_EQ(too_big, nullptr);
  EXPECT_EQ(gpuGetLastError(), gpuErrorMemoryAllocation);  // failing calls are recorded, as in CUDA

  float* p = nullptr;
  ASSERT_EQ(gpuMalloc(&p, 1000 * sizeof(float)), gpuSuccess);
  size_t free1 = 0;
  ASSERT_EQ(gpuMemGetInfo(&free1, &total), gpuSuccess);
  EXPECT_GE(free0 - free1, 1000 * sizeof(float));
  EXPECT_TRUE(simt::is_device_pointer(p, 1000 * sizeof(float)));
  EXPECT_TRUE(simt::is_device_pointer(p + 10, 4));
  EXPECT_FALSE(simt::is_device_pointer(p, 1001 * sizeof(float)));
  EXPECT_FALSE(simt::is_device_pointer(p - 1, 8));
  std::vector<float> host(1000);
  for (size_t i = 0; i < host.size(); ++i) host[i] = static_cast<float>(i) * 0.25f;
  EXPECT_FALSE(simt::is_device_pointer(host.data(), 4));

  // Device ranges must be device memory; host ranges may be anything.
  EXPECT_EQ(gpuMemcpyAsync(host.data(), host.data(), 4, gpuMemcpyHostToDevice, nullptr), gpuErrorInvalidValue);
  EXPECT_EQ(gpuMemcpyAsync(p, host.data(), 1001 * sizeof(float), gpuMemcpyHostToDevice, nullptr), gpuErrorInvalidValue);
  ASSERT_EQ(gpuMemcpyAsync(p, host.data(), 1000 * sizeof(float), gpuMemcpyHostToDevice, nullptr), gpuSuccess);
  float* q = nullptr;
  ASSERT_EQ(gpuMalloc(&q, 1000 * sizeof(float)), gpuSuccess);
  ASSERT_EQ(gpuMemcpyAsync(q, p, 1000 * sizeof(float), gpuMemcpyDeviceToDevice, nullptr), gpuSuccess);
  ASSERT_EQ(gpuMemsetAsync(q, 0, 10 * sizeof(float), nullptr), gpuSuccess);
  std::vector<float> back(1000, -1.0f);
  ASSERT_EQ(gpuMemcpyAsync(back.data(), q, 1000 * sizeof(float), gpuMemcpyDeviceToHost, nullptr), gpuSuccess);
  for (size_t i = 0; i < back.size(); ++i) EXPECT_EQ(back[i], i < 10 ? 0.0f : host[i]) << i;

  EXPECT_EQ(gpuFree(p), gpuSuccess);
  EXPECT_EQ(gpuFree(q), gpuSuccess);
  EXPECT_FALSE(simt::is_device_pointer(p, 4));
  EXPECT_EQ(gpuFree(host.data()), gpuErrorInvalidValue);
  EXPECT_EQ(gpuGetLastError(), gpuErrorInvalidValue);
  size_t free2 = 0;
  ASSERT_EQ(gpuMemGetInfo(&free2, &total), gpuSuccess);
  EXPECT_EQ(free2, free0);
}

TEST_P(MemoryTest, ExhaustingThePoolFailsCleanly) {
  size_t free0 = 0, total = 0;
  ASSERT_EQ(gpuMemGetInfo(&free0, &total), gpuSuccess);
  if (total > (size_t{1} << 30)) GTEST_SKIP() << "pool cap above 1 GiB (CAI_SIMT_MEMORY)";
  std::vector<void*> chunks;
  const size_t chunk = total / 8;
  for (;;) {
    void* c = nullptr;
    const gpuError_t e = gpuMalloc(&c, chunk);
    if (e != gpuSuccess) {
      EXPECT_EQ(e, gpuErrorMemoryAllocation);
      break;
    }
    chunks.push_back(c);
  }
  EXPECT_GE(chunks.size(), 7u);
  EXPECT_LE(chunks.size(), 8u);
  EXPECT_EQ(gpuGetLastError(), gpuErrorMemoryAllocation);
  for (void* c : chunks) EXPECT_EQ(gpuFree(c), gpuSuccess);
  size_t free1 = 0;
  ASSERT_EQ(gpuMemGetInfo(&free1, &total), gpuSuccess);
  EXPECT_EQ(free1, free0);
}

TEST_P(MemoryTest, RuntimeBasics) {
  int n = 0;
  EXPECT_EQ(gpuGetDeviceCount(&n), gpuSuccess);
  EXPECT_EQ(n, 1);
  EXPECT_EQ(gpuSetDevice(0), gpuSuccess);
  gpuDeviceProp prop{};
  ASSERT_EQ(gpuGetDeviceProperties(&prop, 0), gpuSuccess);
  EXPECT_EQ(prop.warpSize, warp());
  EXPECT_GE(prop.multiProcessorCount, 1);
  EXPECT_GT(std::strlen(prop.name), 0u);
  gpuStream_t s{};
  gpuEvent_t e{};
  ASSERT_EQ(gpuStreamCreate(&s), gpuSuccess);
  ASSERT_EQ(gpuEventCreate(&e), gpuSuccess);
  EXPECT_EQ(gpuEventRecord(e, s), gpuSuccess);
  EXPECT_EQ(gpuEventQuery(e), gpuSuccess);
  EXPECT_EQ(gpuEventSynchronize(e), gpuSuccess);
  EXPECT_EQ(gpuStreamSynchronize(s), gpuSuccess);
  EXPECT_EQ(gpuEventDestroy(e), gpuSuccess);
  EXPECT_EQ(gpuStreamDestroy(s), gpuSuccess);
  float* pinned = nullptr;
  ASSERT_EQ(gpuMallocHost(&pinned, 64), gpuSuccess);
  pinned[15] = 1.0f;  // host memory: the host may touch it
  EXPECT_FALSE(simt::is_device_pointer(pinned, 4));
  EXPECT_EQ(gpuFreeHost(pinned), gpuSuccess);
  EXPECT_STRNE(gpuGetErrorString(gpuErrorMemoryAllocation), gpuGetErrorString(gpuSuccess));
}

struct Counters {
  float f_sum;
  int i_sum;
  unsigned u_sum;
  unsigned long long ull_sum;
  int i_max;
  int i_min;
  unsigned u_max;
  unsigned u_min;
  int cas_sum;
  int exch;
};

__global__ void hammer(Counters* c) {
  const int g = static_cast<int>(blockIdx.x * blockDim.x + threadIdx.x);
  atomicAdd(&c->f_sum, 1.0f);
  atomicAdd(&c->i_sum, 2);
  atomicAdd(&c->u_sum, 3u);
  atomicAdd(&c->ull_sum, 1ull << 33);
  atomicMax(&c->i_max, g - 1000);
  atomicMin(&c->i_min, 1000 - g);
  atomicMax(&c->u_max, static_cast<unsigned>(g));
  atomicMin(&c->u_min, static_cast<unsigned>(g) + 7);
  int old = 0;
  for (int seen; (seen = atomicCAS(&c->cas_sum, old, old + 1)) != old;) old = seen;
  atomicExch(&c->exch, 42);
}

TEST_P(MemoryTest, AtomicsAcrossManyBlocks) {
  const int blocks = 256, threads = 128, n = blocks * threads;
  DeviceBuffer<Counters> c(1, Counters{0, 0, 0, 0, -1 << 30, 1 << 30, 0, ~0u, 0, 0});
  GPU_LAUNCH(blocks, threads, 0, nullptr, hammer)(c.get());
  ASSERT_EQ(gpuGetLastError(), gpuSuccess);
  const Counters got = c.download()[0];
  EXPECT_EQ(got.f_sum, static_cast<float>(n));  // exact: n < 2^24
  EXPECT_EQ(got.i_sum, 2 * n);
  EXPECT_EQ(got.u_sum, 3u * n);
  EXPECT_EQ(got.ull_sum, static_cast<unsigned long long>(n) << 33);
  EXPECT_EQ(got.i_max, n - 1 - 1000);
  EXPECT_EQ(got.i_min, 1000 - (n - 1));
  EXPECT_EQ(got.u_max, static_cast<unsigned>(n - 1));
  EXPECT_EQ(got.u_min, 7u);
  EXPECT_EQ(got.cas_sum, n);
  EXPECT_EQ(got.exch, 42);
}

INSTANTIATE_TEST_SUITE_P(Simt, MemoryTest, ::testing::Values(32, 64), simt_test::warp_name);

TEST(SimtEnvironment, ByteSizes) {
  const auto size_of = [](const char* text) {
    setenv("CAI_SIMT_TEST_SIZE", text, 1);
    return simt::detail::env_size("CAI_SIMT_TEST_SIZE", 7);
  };
  EXPECT_EQ(size_of("512MiB"), size_t{512} << 20);
  EXPECT_EQ(size_of("2GiB"), size_t{2} << 30);
  EXPECT_EQ(size_of("2G"), size_t{2} << 30);
  EXPECT_EQ(size_of("64k"), size_t{64} << 10);
  EXPECT_EQ(size_of("1048576"), size_t{1} << 20);
  EXPECT_EQ(size_of("junk"), 7u);
  EXPECT_EQ(size_of("12XB"), 7u);
  EXPECT_EQ(size_of("99999999999999999999"), 7u);
  unsetenv("CAI_SIMT_TEST_SIZE");
}

}  // namespace
