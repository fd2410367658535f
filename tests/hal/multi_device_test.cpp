// Several devices in one process: device lists (ranges, mixed backends, errors naming what exists), the simt backend
// as two devices with a memory pool each (CAI_SIMT_DEVICES=2, set before any test of this binary loads the plugin),
// and the staged communicator moving bytes between every pair of simt and CPU devices.
#include <gtest/gtest.h>

#include <cstdio>
#include <cstdlib>
#include <numeric>
#include <vector>

#include "hal/collective.h"
#include "hal/cpu/cpu_backend.h"
#include "hal/hal.h"
#include "test_paths.h"

namespace cai::hal {
namespace {

class TwoSimtDevices : public ::testing::Environment {
 public:
  void SetUp() override { setenv("CAI_SIMT_DEVICES", "2", 1); }
};
const auto* const kTwoSimtDevices = ::testing::AddGlobalTestEnvironment(new TwoSimtDevices);

class MultiDevice : public ::testing::Test {
 protected:
  void SetUp() override {
    registry_.add(cpu::make_cpu_backend());
    Status st = registry_.load_plugin(test::binary_path("libcai-backend-simt.so"));
    ASSERT_TRUE(st.ok()) << st.to_string();
  }
  Device* device(const std::string& spec) {
    Result<Device*> d = registry_.find_device(spec);
    EXPECT_TRUE(d.ok()) << d.status().to_string();
    return d.ok() ? *d : nullptr;
  }
  // A communicator over cpu:0, simt:0 and simt:1: ranks 0, 1 and 2.
  std::unique_ptr<Communicator> three_ranks() {
    Result<std::unique_ptr<Communicator>> comm =
        make_staged_communicator({device("cpu"), device("simt:0"), device("simt:1")});
    EXPECT_TRUE(comm.ok()) << comm.status().to_string();
    return comm.ok() ? std::move(comm).value() : nullptr;
  }
  std::vector<std::string> names(const std::string& list) {
    Result<std::vector<Device*>> ds = registry_.find_devices(list);
    EXPECT_TRUE(ds.ok()) << ds.status().to_string();
    std::vector<std::string> out;
    if (ds.ok())
      for (Device* d : *ds) out.push_back(d->name());
    return out;
  }

  Registry registry_;
};

TEST_F(MultiDevice, DeviceListsTakeRangesAndMixedBackends) {
  EXPECT_EQ(names("simt:0,simt:1"), (std::vector<std::string>{"simt:0", "simt:1"}));
  EXPECT_EQ(names("simt:0-1"), (std::vector<std::string>{"simt:0", "simt:1"}));
  EXPECT_EQ(names("cpu,simt:1"), (std::vector<std::string>{"cpu:0", "simt:1"}));
  EXPECT_EQ(names("simt:1,cpu:0,simt:0"), (std::vector<std::string>{"simt:1", "cpu:0", "simt:0"}));
}

TEST_F(MultiDevice, BadDeviceListsNameWhatExists) {
  Result<std::vector<Device*>> unknown = registry_.find_devices("simt:0,simt:2");
  ASSERT_FALSE(unknown.ok());
  EXPECT_EQ(unknown.status().code(), StatusCode::kNotFound);
  EXPECT_NE(unknown.status().message().find("cpu:0, simt:0, simt:1"), std::string::npos) << unknown.status().message();
  Result<std::vector<Device*>> backend = registry_.find_devices("npu:0");
  ASSERT_FALSE(backend.ok());
  EXPECT_NE(backend.status().message().find("simt:1"), std::string::npos) << backend.status().message();
  for (const char* bad : {"simt:0,simt:0", "simt:0-1,simt:1", "simt:1-0", "simt:0-", "simt:a-1", ""}) {
    Result<std::vector<Device*>> r = registry_.find_devices(bad);
    ASSERT_FALSE(r.ok()) << bad;
    EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument) << bad << ": " << r.status().message();
  }
}

// Each simt device has its own pool: what one allocates does not show on the other, and a copy on one device's
// stream into the other's memory is refused, as on a card without peer access.
TEST_F(MultiDevice, SimtDevicesHaveTheirOwnMemory) {
  Device* d0 = device("simt:0");
  Device* d1 = device("simt:1");
  ASSERT_TRUE(d0 && d1);
  const size_t free0 = d0->memory_info().free_bytes, free1 = d1->memory_info().free_bytes;
  Result<Buffer> b = d0->allocate(size_t{8} << 20);
  ASSERT_TRUE(b.ok()) << b.status().to_string();
  EXPECT_LE(d0->memory_info().free_bytes + (size_t{8} << 20), free0);
  EXPECT_EQ(d1->memory_info().free_bytes, free1);
  const std::vector<float> v = {1, 2, 3};
  EXPECT_TRUE(d0->default_stream().copy_to_device(b->data(), v.data(), sizeof(float) * v.size()).ok());
  EXPECT_FALSE(d1->default_stream().copy_to_device(b->data(), v.data(), sizeof(float) * v.size()).ok());
}

// Bytes round the ring cpu → simt:0 → simt:1 → cpu arrive unchanged, each hop counted once.
TEST_F(MultiDevice, StagedCommunicatorMovesBytesBetweenAnyPair) {
  const std::unique_ptr<Communicator> comm = three_ranks();
  ASSERT_TRUE(comm);
  Communicator& c = *comm;
  Device* d0 = &c.device(1);
  Device* d1 = &c.device(2);
  EXPECT_EQ(c.size(), 3);
  EXPECT_EQ(c.rank_of(*d1), 2);
  std::vector<float> src(1000), back(1000, 0.0f);
  std::iota(src.begin(), src.end(), -5.0f);
  const size_t n = src.size() * sizeof(float);
  Result<Buffer> on0 = d0->allocate(n), on1 = d1->allocate(n);
  ASSERT_TRUE(on0.ok() && on1.ok());
  ASSERT_TRUE(c.send_recv(0, src.data(), 1, on0->data(), n).ok());
  ASSERT_TRUE(c.send_recv(1, on0->data(), 2, on1->data(), n).ok());
  ASSERT_TRUE(c.send_recv(2, on1->data(), 0, back.data(), n).ok());
  EXPECT_EQ(back, src);
  EXPECT_EQ(c.bytes_moved(), 3 * n);
  EXPECT_EQ(c.bytes_moved(Collective::kSendRecv), 3 * n);
  EXPECT_EQ(c.n_calls(Collective::kSendRecv), 3u);
  Result<Buffer> again = d0->allocate(n);
  ASSERT_TRUE(again.ok());
  EXPECT_TRUE(c.send_recv(1, on0->data(), 1, again->data(), n).ok());  // within a device: copied, not counted
  std::vector<float> copied(src.size());
  ASSERT_TRUE(d0->default_stream().copy_to_host(copied.data(), again->data(), n).ok());
  EXPECT_EQ(copied, src);
  EXPECT_EQ(c.bytes_moved(), 3 * n);
  EXPECT_EQ(c.send_recv(0, src.data(), 3, back.data(), n).code(), StatusCode::kInvalidArgument);
  EXPECT_FALSE(make_staged_communicator({d0, d0}).ok());
  EXPECT_FALSE(make_staged_communicator({}).ok());
}

// An all-reduce over the two simt devices goes through the simt plugin's collectives table (the plugin ABI path a
// vendor library takes); one with the CPU among its ranks stages through the host. Both give the rank-order sum.
TEST_F(MultiDevice, AllReduceUsesTheBackendsCollectiveWhereEveryRankHasIt) {
  const std::unique_ptr<Communicator> comm = three_ranks();
  ASSERT_TRUE(comm);
  Communicator& c = *comm;
  Device* d0 = &c.device(1);
  Device* d1 = &c.device(2);
  EXPECT_NE(c.all_reduce_path({1, 2}).find("simt collectives"), std::string::npos) << c.all_reduce_path({1, 2});
  EXPECT_EQ(c.all_reduce_path({0, 1}), "staged");
  const std::vector<float> a = {1.5f, -2.0f, 1e-3f}, b = {0.25f, 4.0f, 3.0f};
  const size_t bytes = a.size() * sizeof(float);
  for (const std::vector<int>& ranks : {std::vector<int>{1, 2}, std::vector<int>{0, 1}}) {
    std::vector<float> host = a;
    Result<Buffer> first = d0->allocate(bytes), second = d1->allocate(bytes);
    ASSERT_TRUE(first.ok() && second.ok());
    float* p0 = ranks[0] == 0 ? host.data() : static_cast<float*>(first->data());
    float* p1 = static_cast<float*>(ranks[0] == 0 ? first->data() : second->data());
    Device& dev1 = c.device(ranks[1]);
    if (ranks[0] != 0) ASSERT_TRUE(d0->default_stream().copy_to_device(p0, a.data(), bytes).ok());
    ASSERT_TRUE(dev1.default_stream().copy_to_device(p1, b.data(), bytes).ok());
    ASSERT_TRUE(c.all_reduce_sum(ranks, {p0, p1}, a.size()).ok());
    std::vector<float> got0(a.size()), got1(a.size());
    if (ranks[0] == 0)
      got0 = host;
    else
      ASSERT_TRUE(d0->default_stream().copy_to_host(got0.data(), p0, bytes).ok());
    ASSERT_TRUE(dev1.default_stream().copy_to_host(got1.data(), p1, bytes).ok());
    const std::vector<float> sum = {a[0] + b[0], a[1] + b[1], a[2] + b[2]};
    EXPECT_EQ(got0, sum);
    EXPECT_EQ(got1, sum);
  }
  EXPECT_EQ(c.n_calls(Collective::kAllReduce), 2u);
}

// Per-rank buffers of F32 values for the collective tests: one on each rank's device, written and read through its
// stream.
struct RankBuffers {
  Communicator& c;
  std::vector<int> ranks;
  std::vector<Buffer> bufs;

  RankBuffers(Communicator& comm, std::vector<int> rs, const std::vector<std::vector<float>>& values)
      : c(comm), ranks(std::move(rs)) {
    for (size_t i = 0; i < ranks.size(); ++i) {
      Result<Buffer> b = c.device(ranks[i]).allocate(values[i].size() * sizeof(float));
      EXPECT_TRUE(b.ok());
      bufs.push_back(std::move(b).value());
      EXPECT_TRUE(c.device(ranks[i])
                      .default_stream()
                      .copy_to_device(bufs.back().data(), values[i].data(), values[i].size() * sizeof(float))
                      .ok());
    }
  }
  template <class T>
  std::vector<T> ptrs() {
    std::vector<T> p;
    for (Buffer& b : bufs) p.push_back(static_cast<T>(b.data()));
    return p;
  }
  std::vector<float> read(size_t i, size_t n) {
    std::vector<float> v(n);
    EXPECT_TRUE(c.device(ranks[i]).default_stream().copy_to_host(v.data(), bufs[i].data(), n * sizeof(float)).ok());
    return v;
  }
};

// all_gather, reduce_scatter_sum, broadcast and all_to_all over the two simt devices (through the plugin's table,
// ABI 4.3) and over cpu + both simt devices (staged, built from transfers and an all-reduce): the same values, the
// reduction added in rank order (1e8 first, so the order shows). What each moved is counted as its own collective;
// the staged reduce-scatter moves the all-reduce of the whole buffer.
TEST_F(MultiDevice, EveryCollectiveThroughTheLibraryAndStaged) {
  const std::unique_ptr<Communicator> comm = three_ranks();
  ASSERT_TRUE(comm);
  Communicator& c = *comm;
  for (const std::vector<int>& ranks : {std::vector<int>{1, 2}, std::vector<int>{0, 1, 2}}) {
    SCOPED_TRACE(c.all_reduce_path(ranks));
    const size_t k = ranks.size();
    std::vector<std::vector<float>> v(k);
    {  // all_gather: 2 values a rank
      for (size_t i = 0; i < k; ++i) {
        v[i].assign(2 * k, -1.0f);
        v[i][2 * i] = static_cast<float>(i);
        v[i][2 * i + 1] = 0.5f + static_cast<float>(i);
      }
      RankBuffers b(c, ranks, v);
      ASSERT_TRUE(c.all_gather(ranks, b.ptrs<void*>(), 2 * sizeof(float)).ok());
      std::vector<float> want;
      for (size_t i = 0; i < k; ++i) want.insert(want.end(), {static_cast<float>(i), 0.5f + static_cast<float>(i)});
      for (size_t i = 0; i < k; ++i) EXPECT_EQ(b.read(i, 2 * k), want) << "rank " << i;
    }
    {  // reduce_scatter_sum: 3 values a part; element 0 of each part 1e8, then -1e8, then 1
      for (size_t i = 0; i < k; ++i) {
        v[i].clear();
        for (size_t p = 0; p < k; ++p)
          v[i].insert(v[i].end(), {i == 0 ? 1e8f : i == 1 ? -1e8f : 1.0f, static_cast<float>(p), 0.25f * i});
      }
      RankBuffers b(c, ranks, v);
      const uint64_t before = c.bytes_moved(Collective::kReduceScatter);
      ASSERT_TRUE(c.reduce_scatter_sum(ranks, b.ptrs<float*>(), 3).ok());
      for (size_t i = 0; i < k; ++i) {
        std::vector<float> want(v[0].begin() + 3 * i, v[0].begin() + 3 * i + 3);
        for (size_t r = 1; r < k; ++r)
          for (size_t e = 0; e < 3; ++e) want[e] += v[r][3 * i + e];
        const std::vector<float> got = b.read(i, 3 * k);
        EXPECT_EQ(std::vector<float>(got.begin() + 3 * i, got.begin() + 3 * i + 3), want) << "rank " << i;
      }
      const uint64_t whole = 3 * k * sizeof(float);
      EXPECT_EQ(c.bytes_moved(Collective::kReduceScatter) - before, k == 2 ? (k - 1) * whole : 2 * (k - 1) * whole);
    }
    {  // broadcast from the last rank
      for (size_t i = 0; i < k; ++i) v[i] = i == k - 1 ? std::vector<float>{7.0f, -8.5f} : std::vector<float>(2, 0.0f);
      RankBuffers b(c, ranks, v);
      ASSERT_TRUE(c.broadcast(ranks, b.ptrs<void*>(), 2 * sizeof(float), static_cast<int>(k - 1)).ok());
      for (size_t i = 0; i < k; ++i) EXPECT_EQ(b.read(i, 2), v[k - 1]) << "rank " << i;
      EXPECT_EQ(c.broadcast(ranks, b.ptrs<void*>(), 8, static_cast<int>(k)).code(), StatusCode::kInvalidArgument);
    }
    {  // all_to_all: rank i sends rank j i + j + 1 values, 100 i + 10 j + t
      std::vector<uint64_t> bytes(k * k);
      std::vector<std::vector<float>> want(k), in(k, std::vector<float>(4 * k, -1.0f));
      for (size_t i = 0; i < k; ++i) {
        v[i].clear();
        for (size_t j = 0; j < k; ++j) {
          bytes[i * k + j] = (i + j + 1) * sizeof(float);
          for (size_t t = 0; t <= i + j; ++t) v[i].push_back(static_cast<float>(100 * i + 10 * j + t));
        }
        for (size_t s = 0; s < k; ++s)
          for (size_t t = 0; t <= s + i; ++t) want[i].push_back(static_cast<float>(100 * s + 10 * i + t));
      }
      RankBuffers send(c, ranks, v), recv(c, ranks, in);
      const uint64_t before = c.bytes_moved(Collective::kAllToAll);
      ASSERT_TRUE(c.all_to_all(ranks, send.ptrs<const void*>(), recv.ptrs<void*>(), bytes).ok());
      for (size_t i = 0; i < k; ++i) EXPECT_EQ(recv.read(i, want[i].size()), want[i]) << "rank " << i;
      uint64_t between = 0;
      for (size_t i = 0; i < k; ++i)
        for (size_t j = 0; j < k; ++j) between += i == j ? 0 : bytes[i * k + j];
      EXPECT_EQ(c.bytes_moved(Collective::kAllToAll) - before, between);
    }
  }
  for (Collective kind :
       {Collective::kAllGather, Collective::kReduceScatter, Collective::kBroadcast, Collective::kAllToAll})
    EXPECT_EQ(c.n_calls(kind), 2u) << collective_name(kind);
  EXPECT_EQ(c.n_calls(Collective::kSendRecv), 0u);
  EXPECT_EQ(c.n_calls(Collective::kAllReduce), 0u);
}

// A communicator of one rank from the backend's own table: on the device under test where one is named
// (scripts/device-check.sh: CAI_TEST_DEVICE=cuda:0, NCCL), else on simt:0 (the in-plugin stand-in). Summing one rank
// leaves the values as they were.
TEST_F(MultiDevice, NativeCollectiveOfOneRank) {
  const char* named = std::getenv("CAI_TEST_DEVICE");
  const std::string spec = named ? named : "simt:0", backend = spec.substr(0, spec.find(':'));
  if (backend != "simt") {
    Status st = registry_.load_plugin(test::binary_path("libcai-backend-" + backend + ".so"));
    ASSERT_TRUE(st.ok()) << st.to_string();
  }
  Device* d = device(spec);
  ASSERT_TRUE(d);
  Result<std::unique_ptr<NativeCollective>> native = d->native_collective({d});
  ASSERT_TRUE(native.ok()) << native.status().to_string();
  ASSERT_TRUE(*native) << spec << "'s backend brings no collectives table";
  const std::vector<float> values = {1.0f, -2.5f, 3.25f};
  Result<Buffer> buf = d->allocate(values.size() * sizeof(float));
  ASSERT_TRUE(buf.ok());
  ASSERT_TRUE(d->default_stream().copy_to_device(buf->data(), values.data(), values.size() * sizeof(float)).ok());
  ASSERT_TRUE((*native)->all_reduce_sum({static_cast<float*>(buf->data())}, values.size()).ok());
  std::vector<float> back(values.size());
  ASSERT_TRUE(d->default_stream().copy_to_host(back.data(), buf->data(), back.size() * sizeof(float)).ok());
  EXPECT_EQ(back, values);
  std::printf("%s: %s\n", spec.c_str(), (*native)->library().c_str());
}

}  // namespace
}  // namespace cai::hal
