// simt warps: shuffles (xor, down, indexed) incl. edge and inactive lanes, votes, and a shuffle block reduction.
#include <numeric>

#include "simt_test_util.h"

namespace {

using simt_test::DeviceBuffer;

class WarpOpsTest : public simt_test::WarpTest {};

// Butterfly within warps, then warp partials through shared memory: the pattern of kernels/reduce.cuh.
__global__ void block_sum(const float* in, float* out) {
  __shared__ float partials[GPU_MAX_WARPS];
  float v = in[blockIdx.x * blockDim.x + threadIdx.x];
  for (int offset = gpu_warp_size() / 2; offset > 0; offset /= 2) v += gpu_shfl_xor(v, offset);
  if (gpu_lane_id() == 0) partials[gpu_warp_id()] = v;
  __syncthreads();
  if (threadIdx.x == 0) {
    float total = 0.0f;
    for (int w = 0; w < static_cast<int>(blockDim.x) / gpu_warp_size(); ++w) total += partials[w];
    out[blockIdx.x] = total;
  }
}

TEST_P(WarpOpsTest, BlockReductionWithShuffles) {
  const int threads = 256, blocks = 16;
  std::vector<float> host(threads * blocks);
  for (size_t i = 0; i < host.size(); ++i) host[i] = static_cast<float>(i % 97);
  DeviceBuffer<float> in(host.size());
  in.upload(host);
  DeviceBuffer<float> out(blocks);
  GPU_LAUNCH(blocks, threads, 0, nullptr, block_sum)(in.get(), out.get());
  ASSERT_EQ(gpuGetLastError(), gpuSuccess);
  const std::vector<float> got = out.download();
  for (int b = 0; b < blocks; ++b) {
    EXPECT_EQ(got[b], std::accumulate(host.begin() + b * threads, host.begin() + (b + 1) * threads, 0.0f)) << b;
  }
}

__global__ void shuffles(int* down, unsigned* xor_out, float* bcast, int* rotated) {
  const int lane = gpu_lane_id();
  const int t = static_cast<int>(threadIdx.x);
  down[t] = gpu_shfl_down(100 + lane, 3);
  xor_out[t] = gpu_shfl_xor(static_cast<unsigned>(lane), 5);
  bcast[t] = gpu_shfl(static_cast<float>(lane) * 0.5f, 7);
  rotated[t] = gpu_shfl(lane, lane + 1);  // the source lane wraps modulo the warp width
}

TEST_P(WarpOpsTest, ShuffleEdgeLanes) {
  const int n = 2 * warp();
  DeviceBuffer<int> down(n), rotated(n);
  DeviceBuffer<unsigned> xor_out(n);
  DeviceBuffer<float> bcast(n);
  GPU_LAUNCH(1, n, 0, nullptr, shuffles)(down.get(), xor_out.get(), bcast.get(), rotated.get());
  ASSERT_EQ(gpuGetLastError(), gpuSuccess);
  const auto d = down.download();
  const auto x = xor_out.download();
  const auto b = bcast.download();
  const auto r = rotated.download();
  for (int t = 0; t < n; ++t) {
    const int lane = t % warp();
    EXPECT_EQ(d[t], lane + 3 < warp() ? 100 + lane + 3 : 100 + lane) << t;  // past the end: own value
    EXPECT_EQ(x[t], static_cast<unsigned>(lane ^ 5)) << t;
    EXPECT_EQ(b[t], 3.5f) << t;
    EXPECT_EQ(r[t], (lane + 1) % warp()) << t;
  }
}

__global__ void votes(unsigned long long* ballots, int* flags) {
  const int lane = gpu_lane_id();
  const uint64_t ballot = gpu_ballot(lane % 3 == 0);
  const bool any7 = gpu_any(lane == 7);
  const bool any_none = gpu_any(lane > 1000);
  const bool all_in = gpu_all(lane < gpu_warp_size());
  const bool all_but5 = gpu_all(lane != 5);
  gpu_syncwarp();
  if (lane == 0) {
    ballots[gpu_warp_id()] = ballot;
    flags[gpu_warp_id()] = any7 | any_none << 1 | all_in << 2 | all_but5 << 3;
  }
}

TEST_P(WarpOpsTest, BallotAnyAll) {
  DeviceBuffer<unsigned long long> ballots(2);
  DeviceBuffer<int> flags(2);
  GPU_LAUNCH(1, 2 * warp(), 0, nullptr, votes)(ballots.get(), flags.get());
  ASSERT_EQ(gpuGetLastError(), gpuSuccess);
  uint64_t expected = 0;
  for (int lane = 0; lane < warp(); lane += 3) expected |= uint64_t{1} << lane;
  for (int w = 0; w < 2; ++w) {
    EXPECT_EQ(ballots.download()[w], expected);
    EXPECT_EQ(flags.download()[w], 0b0101);
  }
}

// A block that is not a multiple of the warp width: the last warp is partial, its missing lanes inactive.
__global__ void partial_warp(int* count, int* down, int* block_total) {
  __shared__ int total;
  if (threadIdx.x == 0) total = 0;
  __syncthreads();
  const int lane = gpu_lane_id();
  const int live = __builtin_popcountll(gpu_ballot(1));
  const int next = gpu_shfl_down(lane, 1);
  atomicAdd(&total, 1);
  __syncthreads();
  count[threadIdx.x] = live;
  down[threadIdx.x] = next;
  if (threadIdx.x == 0) *block_total = total;
}

TEST_P(WarpOpsTest, PartialLastWarp) {
  const int n = warp() + 8;
  DeviceBuffer<int> count(n), down(n), total(1);
  GPU_LAUNCH(1, n, 0, nullptr, partial_warp)(count.get(), down.get(), total.get());
  ASSERT_EQ(gpuGetLastError(), gpuSuccess);
  const auto c = count.download();
  const auto d = down.download();
  for (int t = 0; t < n; ++t) {
    const bool last_warp = t >= warp();
    const int lane = t % warp();
    EXPECT_EQ(c[t], last_warp ? 8 : warp()) << t;
    EXPECT_EQ(d[t], lane == (last_warp ? 7 : warp() - 1) ? lane : lane + 1) << t;  // inactive source: own value
  }
  EXPECT_EQ(total.download()[0], n);
}

INSTANTIATE_TEST_SUITE_P(Simt, WarpOpsTest, ::testing::Values(32, 64), simt_test::warp_name);

}  // namespace
