// The stand-in for another process's device (hal::RemoteDevice) and the communicator over devices of several
// processes, against a scripted ProcessGroup: this process is rank 0 of 2, rank 1's side is played by the fake.
#include <gtest/gtest.h>

#include <cstring>

#include "hal/collective.h"
#include "hal/cpu/cpu_backend.h"
#include "hal/remote_device.h"

namespace cai::hal {
namespace {

// Rank 0 of two. All-gathers return `peer` as rank 1's part (or the next of `peers`, while there are any); sends are
// recorded; receives deliver `peer`'s bytes.
class FakeGroup final : public ProcessGroup {
 public:
  std::vector<uint8_t> peer;
  std::vector<std::vector<uint8_t>> peers;
  std::vector<std::vector<uint8_t>> sent;
  std::vector<int> sent_to, received_from;
  bool fail = false;

  int rank() const override { return 0; }
  int size() const override { return 2; }
  int local_rank() const override { return 0; }
  std::string host() const override { return "test-host"; }
  std::string library() const override { return "fake MPI"; }
  std::string error() const override { return "rank 1 did not answer within 1.0 s"; }
  void interrupt(const std::string&) override {}
  [[noreturn]] void abort(int code) override { std::_Exit(code); }
  bool broadcast(void*, size_t, int, double) override { return !fail; }
  bool all_gather(const void* mine, void* all, size_t n, const std::vector<int>& ranks, double) override {
    EXPECT_EQ(ranks, (std::vector<int>{0, 1}));
    if (fail) return false;
    if (!peers.empty()) {
      peer = peers.front();
      peers.erase(peers.begin());
    }
    std::memcpy(all, mine, n);
    std::memcpy(static_cast<uint8_t*>(all) + n, peer.data(), std::min(n, peer.size()));
    return true;
  }
  bool send(const void* buf, size_t n, int to, double) override {
    sent.emplace_back(static_cast<const uint8_t*>(buf), static_cast<const uint8_t*>(buf) + n);
    sent_to.push_back(to);
    return !fail;
  }
  bool recv(void* buf, size_t n, int from, double) override {
    received_from.push_back(from);
    std::memcpy(buf, peer.data(), std::min(n, peer.size()));
    return !fail;
  }
};

template <class T>
std::vector<uint8_t> bytes_of(const std::vector<T>& v) {
  const auto* p = reinterpret_cast<const uint8_t*>(v.data());
  return {p, p + v.size() * sizeof(T)};
}

DeviceInfo info(const char* name) {
  DeviceInfo i;
  std::strcpy(i.name, name);
  std::strcpy(i.host, "other-host");
  i.total_bytes = 1 << 30;
  i.free_bytes = 1 << 29;
  return i;
}

Device& cpu() {
  Result<Device*> d = Registry::global().find_device("cpu");
  return **d;
}

// A second host device in this process: another CPU backend's.
Device& cpu2() {
  static const std::unique_ptr<Backend> backend = cpu::make_cpu_backend();
  return *backend->devices().front();
}

Buffer reserve(RemoteDevice& d, size_t n) {
  Result<Buffer> b = d.allocate(n, MemoryKind::kDevice);
  EXPECT_TRUE(b.ok());
  return std::move(b).value();
}

TEST(RemoteDevice, ReservesAddressSpaceAndRunsNothing) {
  FakeGroup group;
  RemoteDevice d(info("simt:1"), 1, group);
  EXPECT_EQ(d.name(), "rank1/simt:1");
  EXPECT_TRUE(is_remote(d));
  EXPECT_FALSE(is_remote(cpu()));
  EXPECT_EQ(owning_process(d, group), 1);
  EXPECT_EQ(owning_process(cpu(), group), 0);
  {
    Result<Buffer> b = d.allocate(size_t{1} << 28, MemoryKind::kDevice);
    ASSERT_TRUE(b.ok());
    EXPECT_NE(b->data(), nullptr);
    EXPECT_EQ(d.memory_info().free_bytes, (size_t{1} << 29) - (size_t{1} << 28));  // what the owner will hold
    const float x = 1.0f;
    EXPECT_TRUE(d.default_stream().copy_to_device(b->data(), &x, sizeof x).ok());  // moves nothing
    TensorView v = TensorView::make(b->data(), DType::kF32, {4, 8});
    v.device = &d;
    EXPECT_TRUE(d.ops().add(d.op_context(), v, v, v).ok());  // a no-op: the reservation is never touched
  }
  EXPECT_EQ(d.memory_info().free_bytes, size_t{1} << 29);
}

TEST(RemoteDevice, JobDevicesAreThisOneAndStandIns) {
  FakeGroup group;
  group.peers = {bytes_of(std::vector<int64_t>{1}), bytes_of(std::vector<DeviceInfo>{info("cuda:0")})};
  Result<std::vector<Device*>> devices = job_devices(group, {&cpu()}, 1.0);
  ASSERT_TRUE(devices.ok()) << devices.status().to_string();
  ASSERT_EQ(devices->size(), 2u);
  EXPECT_EQ((*devices)[0], &cpu());
  EXPECT_EQ((*devices)[1]->name(), "rank1/cuda:0");
  EXPECT_NE((*devices)[1]->description().find("other-host"), std::string::npos);
}

TEST(CrossProcessCommunicator, AddsTheRanksInOrderAndMovesOnlyWhatThisProcessHolds) {
  FakeGroup group;
  RemoteDevice other(info("cpu:0"), 1, group);
  Result<std::unique_ptr<Communicator>> comm = make_communicator({&cpu(), &other});
  ASSERT_TRUE(comm.ok()) << comm.status().to_string();
  EXPECT_EQ((*comm)->all_reduce_path({0, 1}), "MPI all-gather (fake MPI)");

  std::vector<float> mine = {1.0f, 1e8f, -3.0f}, theirs = {2.0f, 1.0f, 0.5f};
  group.peer = bytes_of(theirs);
  std::vector<float> expect = mine;
  for (size_t i = 0; i < expect.size(); ++i) expect[i] += theirs[i];  // rank 0's, then rank 1's added
  Buffer far = reserve(other, mine.size() * sizeof(float));
  ASSERT_TRUE((*comm)->all_reduce_sum({0, 1}, {mine.data(), static_cast<float*>(far.data())}, mine.size()).ok());
  EXPECT_EQ(mine, expect);
  EXPECT_EQ((*comm)->bytes_moved(Collective::kAllReduce), 2 * mine.size() * sizeof(float));

  std::vector<float> out(3);
  ASSERT_TRUE((*comm)->send_recv(0, mine.data(), 1, far.data(), 3 * sizeof(float)).ok());
  ASSERT_EQ(group.sent_to, std::vector<int>{1});
  EXPECT_EQ(group.sent.front(), bytes_of(mine));
  ASSERT_TRUE((*comm)->send_recv(1, far.data(), 0, out.data(), 3 * sizeof(float)).ok());
  EXPECT_EQ(group.received_from, std::vector<int>{1});
  EXPECT_EQ(out, theirs);
  EXPECT_EQ((*comm)->bytes_moved(Collective::kSendRecv), 6 * sizeof(float));
}

// Processes must offer as many devices each; the error names the rank that differs.
TEST(RemoteDevice, JobDevicesNeedAsManyOnEveryRank) {
  FakeGroup group;
  group.peers = {bytes_of(std::vector<int64_t>{2})};
  Result<std::vector<Device*>> devices = job_devices(group, {&cpu()}, 1.0);
  ASSERT_FALSE(devices.ok());
  EXPECT_NE(devices.status().message().find("rank 1 drives 2 device(s), rank 0 1"), std::string::npos)
      << devices.status().to_string();
}

// Two devices in this process and two in rank 1's: the all-reduce gathers each process's buffers and adds all four in
// the ranks' order, here 1e8 first so that the order shows in the bits.
TEST(CrossProcessCommunicator, SeveralDevicesPerProcessAddInTheRanksOrder) {
  FakeGroup group;
  RemoteDevice a(info("cpu:0"), 1, group), b(info("simt:0"), 1, group);
  Result<std::unique_ptr<Communicator>> comm = make_communicator({&cpu(), &a, &b, &cpu2()});
  ASSERT_TRUE(comm.ok()) << comm.status().to_string();
  std::vector<float> r0 = {1e8f, 1.0f}, r3 = {1.0f, 2.0f};
  const std::vector<float> r1 = {1.0f, 3.0f}, r2 = {-1e8f, 4.0f};
  std::vector<float> theirs = r1;
  theirs.insert(theirs.end(), r2.begin(), r2.end());
  group.peer = bytes_of(theirs);  // rank 1's two slots: comm ranks 1 and 2
  std::vector<float> expect(2);
  for (size_t j = 0; j < 2; ++j) expect[j] = ((r0[j] + r1[j]) + r2[j]) + r3[j];
  Buffer fa = reserve(a, 8), fb = reserve(b, 8);
  ASSERT_TRUE(
      (*comm)
          ->all_reduce_sum({0, 1, 2, 3},
                           {r0.data(), static_cast<float*>(fa.data()), static_cast<float*>(fb.data()), r3.data()}, 2)
          .ok());
  EXPECT_EQ(r0, expect);
  EXPECT_EQ(r3, expect);
}

TEST(CrossProcessCommunicator, AProcessOutsideTheRanksDoesNothing) {
  FakeGroup group;
  RemoteDevice a(info("simt:0"), 1, group), b(info("simt:1"), 1, group);
  Result<std::unique_ptr<Communicator>> comm = make_communicator({&cpu(), &a, &b});
  ASSERT_TRUE(comm.ok());
  Buffer x = reserve(a, 16), y = reserve(b, 16);
  EXPECT_TRUE((*comm)->send_recv(1, x.data(), 2, y.data(), 16).ok());
  EXPECT_EQ((*comm)->bytes_moved(), 0u);
  EXPECT_TRUE(group.sent.empty() && group.received_from.empty());
}

}  // namespace
}  // namespace cai::hal
