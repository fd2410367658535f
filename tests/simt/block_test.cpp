// simt blocks: barriers, per-block static and dynamic shared memory, thread/block indices, launch errors, timing.
#include <algorithm>
#include <chrono>
#include <cstdio>

#include "simt_test_util.h"

namespace {

using simt_test::DeviceBuffer;
class BlockTest : public simt_test::WarpTest {};

// Each round every thread writes its slot, and after a barrier reads its mirror's: any missing barrier shows.
__global__ void mirror_rounds(int* out, int rounds) {
  __shared__ int buf[1024];
  const unsigned t = threadIdx.x;
  const unsigned n = blockDim.x;
  int v = static_cast<int>(t + 1000 * blockIdx.x);
  for (int r = 0; r < rounds; ++r) {
    buf[t] = v;
    __syncthreads();
    v = buf[n - 1 - t] + 1;
    __syncthreads();
  }
  out[blockIdx.x * n + t] = v;
}

TEST_P(BlockTest, BarrierOrdersSharedWritesAndReads) {
  const int threads = 256, blocks = 8, rounds = 5;
  DeviceBuffer<int> out(threads * blocks, -1);
  GPU_LAUNCH(blocks, threads, 0, nullptr, mirror_rounds)(out.get(), rounds);
  ASSERT_EQ(gpuGetLastError(), gpuSuccess);
  const std::vector<int> got = out.download();
  for (int b = 0; b < blocks; ++b) {
    for (int t = 0; t < threads; ++t) {
      const int src = rounds % 2 ? threads - 1 - t : t;  // odd rounds end mirrored
      ASSERT_EQ(got[b * threads + t], src + 1000 * b + rounds) << "block " << b << " thread " << t;
    }
  }
}

// A racy kernel: each thread reads its neighbours' shared slots with no barrier after the writes. Index order hides
// the read of the lower neighbour's write and exposes the higher one's; reverse order does the opposite, so running
// kernels in both orders catches a missing barrier whichever neighbour it involves.
__global__ void reads_neighbours_without_barrier(int* lower, int* higher) {
  __shared__ int slot[64];
  const unsigned t = threadIdx.x;
  slot[t] = 1;
  __syncthreads();
  slot[t] = 2;  // the write the neighbours race with
  lower[t] = t > 0 ? slot[t - 1] : 2;
  higher[t] = t + 1 < blockDim.x ? slot[t + 1] : 2;
}

TEST_P(BlockTest, ReverseOrderExposesTheOtherSideOfARace) {
  for (bool reverse : {false, true}) {
    simt::set_reverse_order(reverse);
    DeviceBuffer<int> lower(64, 0), higher(64, 0);
    GPU_LAUNCH(1, 64, 0, nullptr, reads_neighbours_without_barrier)(lower.get(), higher.get());
    ASSERT_EQ(gpuGetLastError(), gpuSuccess);
    const std::vector<int> lo = lower.download(), hi = higher.download();
    // Index order: lower neighbours already wrote 2, higher ones still hold 1. Reverse order: the other way round.
    EXPECT_EQ(lo[10], reverse ? 1 : 2) << "reverse " << reverse;
    EXPECT_EQ(hi[10], reverse ? 2 : 1) << "reverse " << reverse;
  }
  simt::set_reverse_order(false);
}

// Every thread checks the whole shared array holds its own block's id: blocks running at once on other workers
// must not see each other's shared memory.
__global__ void shared_is_per_block(int* bad) {
  __shared__ unsigned owner[128];
  for (int rep = 0; rep < 4; ++rep) {
    owner[threadIdx.x] = blockIdx.x;
    __syncthreads();
    for (unsigned i = 0; i < blockDim.x; ++i) {
      if (owner[i] != blockIdx.x) atomicAdd(bad, 1);
    }
    __syncthreads();
  }
}

TEST_P(BlockTest, SharedMemoryIsPerBlock) {
  DeviceBuffer<int> bad(1, 0);
  GPU_LAUNCH(512, 128, 0, nullptr, shared_is_per_block)(bad.get());
  ASSERT_EQ(gpuGetLastError(), gpuSuccess);
  EXPECT_EQ(bad.download()[0], 0);
}

__global__ void dynamic_mirror(float* out) {
  GPU_DYNAMIC_SHARED(float, tile);
  const unsigned t = threadIdx.x;
  tile[t] = static_cast<float>(t) + 0.5f;
  tile[blockDim.x + t] = static_cast<float>(blockIdx.x);
  __syncthreads();
  out[blockIdx.x * blockDim.x + t] = tile[blockDim.x - 1 - t] + tile[2 * blockDim.x - 1 - t];
}

TEST_P(BlockTest, DynamicSharedMemory) {
  const int threads = 192, blocks = 6;
  DeviceBuffer<float> out(threads * blocks);
  GPU_LAUNCH(blocks, threads, 2 * threads * sizeof(float), nullptr, dynamic_mirror)(out.get());
  ASSERT_EQ(gpuGetLastError(), gpuSuccess);
  const std::vector<float> got = out.download();
  for (int b = 0; b < blocks; ++b) {
    for (int t = 0; t < threads; ++t) EXPECT_EQ(got[b * threads + t], (threads - 1 - t) + 0.5f + b);
  }
}

__global__ void write_indices(unsigned* out) {
  const unsigned tid = threadIdx.x + blockDim.x * (threadIdx.y + blockDim.y * threadIdx.z);
  const unsigned bid = blockIdx.x + gridDim.x * (blockIdx.y + gridDim.y * blockIdx.z);
  const unsigned per_block = blockDim.x * blockDim.y * blockDim.z;
  out[bid * per_block + tid] = (blockIdx.z << 24) | (blockIdx.y << 20) | (blockIdx.x << 16) | (threadIdx.z << 8) |
                               (threadIdx.y << 4) | threadIdx.x;
}

TEST_P(BlockTest, ThreeDimensionalIndices) {
  const dim3 grid(3, 2, 2), block(8, 4, 2);
  DeviceBuffer<unsigned> out(12 * 64);
  GPU_LAUNCH(grid, block, 0, nullptr, write_indices)(out.get());
  ASSERT_EQ(gpuGetLastError(), gpuSuccess);
  const std::vector<unsigned> got = out.download();
  size_t i = 0;
  for (unsigned bz = 0; bz < 2; ++bz)
    for (unsigned by = 0; by < 2; ++by)
      for (unsigned bx = 0; bx < 3; ++bx)
        for (unsigned tz = 0; tz < 2; ++tz)
          for (unsigned ty = 0; ty < 4; ++ty)
            for (unsigned tx = 0; tx < 8; ++tx, ++i)
              ASSERT_EQ(got[i], (bz << 24) | (by << 20) | (bx << 16) | (tz << 8) | (ty << 4) | tx) << i;
}

template <class T, int Scale>
__global__ void scale_add(T* p, T add, int n) {
  const int i = static_cast<int>(blockIdx.x * blockDim.x + threadIdx.x);
  if (i < n) p[i] = p[i] * static_cast<T>(Scale) + add;
}

TEST_P(BlockTest, TemplateKernelWithTwoArguments) {
  DeviceBuffer<float> p(100, 2.0f);
  GPU_LAUNCH(2, 64, 0, nullptr, scale_add<float, 3>)(p.get(), 0.5f, 100);  // an int/double would convert too
  ASSERT_EQ(gpuGetLastError(), gpuSuccess);
  for (float v : p.download()) EXPECT_EQ(v, 6.5f);
}

__global__ void set_flag(int* flag) { *flag = 1; }

TEST_P(BlockTest, BadConfigurationsFailWithoutRunning) {
  DeviceBuffer<int> flag(1, 0);
  GPU_LAUNCH(1, 2048, 0, nullptr, set_flag)(flag.get());
  EXPECT_EQ(gpuGetLastError(), gpuErrorInvalidConfiguration);
  EXPECT_EQ(gpuGetLastError(), gpuSuccess);  // reading clears it
  GPU_LAUNCH(0, 32, 0, nullptr, set_flag)(flag.get());
  EXPECT_EQ(gpuGetLastError(), gpuErrorInvalidConfiguration);
  GPU_LAUNCH(1, dim3(32, 32, 2), 0, nullptr, set_flag)(flag.get());
  EXPECT_EQ(gpuGetLastError(), gpuErrorInvalidConfiguration);
  GPU_LAUNCH(1, 32, 1 << 20, nullptr, set_flag)(flag.get());
  EXPECT_EQ(gpuGetLastError(), gpuErrorInvalidConfiguration);
  EXPECT_EQ(flag.download()[0], 0);
  GPU_LAUNCH(1, 1024, 0, nullptr, set_flag)(flag.get());
  EXPECT_EQ(gpuGetLastError(), gpuSuccess);
  EXPECT_EQ(flag.download()[0], 1);
}

__global__ void early_exit_before_barrier(int* out) {
  if (threadIdx.x == 5) return;
  __syncthreads();
  out[blockIdx.x] = 1;
}

__global__ void warp_op_against_barrier(int* out) {
  int v = static_cast<int>(threadIdx.x);
  if (threadIdx.x % 2 == 0) {
    v = gpu_shfl_xor(v, 1);
  } else {
    __syncthreads();
  }
  out[threadIdx.x] = v;
}

TEST_P(BlockTest, DeadlocksAreLaunchErrorsAndTheRuntimeRecovers) {
  DeviceBuffer<int> out(256, 0);
  GPU_LAUNCH(64, 128, 0, nullptr, early_exit_before_barrier)(out.get());
  EXPECT_EQ(gpuGetLastError(), gpuErrorLaunchFailure);
  EXPECT_EQ(gpuGetLastError(), gpuSuccess);
  GPU_LAUNCH(1, 128, 0, nullptr, warp_op_against_barrier)(out.get());
  EXPECT_EQ(gpuGetLastError(), gpuErrorLaunchFailure);
  DeviceBuffer<int> mirrored(256 * 4, -1);
  GPU_LAUNCH(4, 256, 0, nullptr, mirror_rounds)(mirrored.get(), 2);
  ASSERT_EQ(gpuGetLastError(), gpuSuccess);
  const std::vector<int> got = mirrored.download();
  for (int i = 0; i < 256 * 4; ++i) ASSERT_EQ(got[i], i % 256 + 1000 * (i / 256) + 2);
}

__global__ void one_barrier(float* out) {
  __shared__ float buf[256];
  buf[threadIdx.x] = static_cast<float>(threadIdx.x);
  __syncthreads();
  if (threadIdx.x == 0) out[blockIdx.x] = buf[255];
}

__global__ void no_barrier(float* out) { out[blockIdx.x * blockDim.x + threadIdx.x] = 1.0f; }

// Median wall time of `runs` launches, in milliseconds.
template <class Launch>
double median_ms(int runs, Launch launch) {
  std::vector<double> ms;
  for (int r = 0; r < runs; ++r) {
    const auto t0 = std::chrono::steady_clock::now();
    launch();
    ms.push_back(std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count());
  }
  std::sort(ms.begin(), ms.end());
  return ms[ms.size() / 2];
}

TEST_P(BlockTest, LaunchCost) {
  DeviceBuffer<float> out(1024 * 256);
  const double barrier_ms = median_ms(5, [&] { GPU_LAUNCH(1024, 256, 0, nullptr, one_barrier)(out.get()); });
  ASSERT_EQ(gpuGetLastError(), gpuSuccess);
  EXPECT_EQ(out.download()[1023], 255.0f);
  const double plain_ms = median_ms(5, [&] { GPU_LAUNCH(1024, 256, 0, nullptr, no_barrier)(out.get()); });
  ASSERT_EQ(gpuGetLastError(), gpuSuccess);
  const double tiny_ms = median_ms(101, [&] { GPU_LAUNCH(1, 32, 0, nullptr, no_barrier)(out.get()); });
  std::printf("simt warp %d: 1024x256 with one __syncthreads %.2f ms, without %.2f ms; 1x32 launch %.1f us\n", warp(),
              barrier_ms, plain_ms, tiny_ms * 1000);
  EXPECT_LT(barrier_ms, 5000.0);
}

INSTANTIATE_TEST_SUITE_P(Simt, BlockTest, ::testing::Values(32, 64), simt_test::warp_name);

}  // namespace
