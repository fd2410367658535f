// Communicator: moves tensors between the devices of one group (ranks = positions in the group), for the layouts that
// spread a model over several devices (pipeline stages, tensor-parallel ranks, experts on another device).
#pragma once

#include <array>
#include <cstdint>
#include <memory>
#include <vector>

#include "hal/hal.h"

namespace cai::hal {

enum class Collective : uint8_t { kSendRecv, kAllReduce, kAllGather, kReduceScatter, kBroadcast, kAllToAll, kCount };
const char* collective_name(Collective c);  // "send_recv", "all_reduce", "all_gather", ...

// Ordered on the ranks' default streams like ops: a transfer starts after the work queued before it on the source
// and is seen by the work queued after it on the destination.
class Communicator {
 public:
  virtual ~Communicator() = default;
  int size() const { return static_cast<int>(devices_.size()); }
  Device& device(int rank) const { return *devices_[static_cast<size_t>(rank)]; }
  // The rank of `d` in this group, or -1.
  int rank_of(const Device& d) const;

  // n bytes from src (memory of rank `from`) to dst (memory of rank `to`); from == to copies within the device
  // (nothing where src == dst) and counts no bytes moved.
  virtual Status send_recv(int from, const void* src, int to, void* dst, size_t n) = 0;
  // bufs[i] (n F32 values in the memory of ranks[i]) all become the sum over i. Through the backend's own collective
  // where every rank's device has one (NativeCollective: NCCL, RCCL, ...), else staged: added in the order of
  // `ranks` whatever the values, so a layout gives the same bits on every run and on every rank.
  virtual Status all_reduce_sum(const std::vector<int>& ranks, const std::vector<float*>& bufs, size_t n) = 0;
  // What an all-reduce over these ranks runs on: the vendor library, or "staged".
  virtual std::string all_reduce_path(const std::vector<int>& ranks) = 0;

  // The other collectives, in place as NCCL's, over k = ranks.size() buffers, bufs[i] in the memory of ranks[i].
  // Through the backend's library where it brings them (ABI 4.3), else through send_recv and all_reduce_sum, so
  // every communicator has them.
  // all_gather: bufs[i] holds k parts of `part` bytes, its own at place i; afterwards every buffer holds every part.
  virtual Status all_gather(const std::vector<int>& ranks, const std::vector<void*>& bufs, size_t part);
  // bufs[i] holds k parts of n F32 values; afterwards part i of bufs[i] is the sum over the ranks of their part i,
  // added in the order of `ranks` where staged; the other parts are undefined.
  virtual Status reduce_scatter_sum(const std::vector<int>& ranks, const std::vector<float*>& bufs, size_t n);
  // bufs[root]'s n bytes (root: a position in `ranks`) into every other buffer.
  virtual Status broadcast(const std::vector<int>& ranks, const std::vector<void*>& bufs, size_t n, int root);
  // bytes[i * k + j] bytes from send[i] to recv[j]: a send buffer holds its parts in the order of the receivers, a
  // receive buffer in the order of the senders; every process is given the whole k × k matrix.
  virtual Status all_to_all(const std::vector<int>& ranks, const std::vector<const void*>& send,
                            const std::vector<void*>& recv, const std::vector<uint64_t>& bytes);

  // Bytes moved between devices since creation, by collective and in all, and the calls that moved them (what
  // `cai bench` reports per token). An all-reduce counts what a ring moves: 2 (k - 1) × its bytes over k ranks.
  uint64_t bytes_moved(Collective c) const { return bytes_[static_cast<size_t>(c)]; }
  uint64_t bytes_moved() const;
  uint64_t n_calls(Collective c) const { return calls_[static_cast<size_t>(c)]; }

 protected:
  explicit Communicator(std::vector<Device*> devices) : devices_(std::move(devices)) {}
  void count(Collective c, size_t n) { bytes_[static_cast<size_t>(c)] += n, ++calls_[static_cast<size_t>(c)]; }
  // invalid_argument unless both ranks are in the group.
  Status check_send_recv(int from, int to) const;
  // invalid_argument unless there are as many buffers as ranks, at least one, each rank in the group once.
  Status check_ranks(const char* what, const std::vector<int>& ranks, size_t n_bufs) const;
  // What each collective moves between devices, counted where the library runs it: ring all-gather and
  // reduce-scatter (k - 1) × k parts, a broadcast k - 1 copies, an all-to-all its parts between different ranks.
  void count_all_gather(size_t k, size_t part) { count(Collective::kAllGather, (k - 1) * k * part); }
  void count_reduce_scatter(size_t k, size_t n) { count(Collective::kReduceScatter, (k - 1) * k * n * sizeof(float)); }
  void count_broadcast(size_t k, size_t n) { count(Collective::kBroadcast, (k - 1) * n); }
  void count_all_to_all(size_t k, const std::vector<uint64_t>& bytes);

 private:
  std::vector<Device*> devices_;
  // Where a collective runs through send_recv and all_reduce_sum, their bytes count as its own and their calls as one.
  class CountAs;

  std::array<uint64_t, static_cast<size_t>(Collective::kCount)> bytes_{}, calls_{};
};

// The implementation every backend has: staged through host memory with the devices' own copy calls (a copy to the
// host blocks until the source's earlier work is done; where a device addresses host memory, the CPU, its side is read
// or written in place), and all-reduces through the ranks' backend collective where they have one (created on first
// use per group of ranks; one that fails to start is logged and the group stays staged). Errors: an empty group or a
// device named twice (invalid_argument).
Result<std::unique_ptr<Communicator>> make_staged_communicator(std::vector<Device*> devices);

// The communicator a group of devices needs: the staged one where this process drives them all, else (some are
// RemoteDevices of an MPI job) one whose transfers with other processes go through the job's ProcessGroup: a
// send_recv is a send on the owner of the source and a receive on the owner of the destination (nothing elsewhere),
// an all-reduce gathers every rank's buffer on each member process and adds them there in the order of the ranks, so
// each process gets the bits one process would. Each process counts the bytes it sends or receives. Every transfer
// waits at most collective_timeout(); a failure is unavailable naming the rank, and marks the group failed
// (group_failure()). Errors: as make_staged_communicator.
Result<std::unique_ptr<Communicator>> make_communicator(std::vector<Device*> devices);

}  // namespace cai::hal
