// What every Communicator shares: collective names, byte counters, rank checks, and the collectives a backend
// library may bring, built from send_recv and all_reduce_sum where it does not.
#include <algorithm>

#include "hal/collective.h"

namespace cai::hal {

const char* collective_name(Collective c) {
  switch (c) {
    case Collective::kSendRecv: return "send_recv";
    case Collective::kAllReduce: return "all_reduce";
    case Collective::kAllGather: return "all_gather";
    case Collective::kReduceScatter: return "reduce_scatter";
    case Collective::kBroadcast: return "broadcast";
    case Collective::kAllToAll: return "all_to_all";
    case Collective::kCount: break;
  }
  return "?";
}

uint64_t Communicator::bytes_moved() const {
  uint64_t n = 0;
  for (uint64_t b : bytes_) n += b;
  return n;
}

int Communicator::rank_of(const Device& d) const {
  const auto it = std::find(devices_.begin(), devices_.end(), &d);
  return it == devices_.end() ? -1 : static_cast<int>(it - devices_.begin());
}

Status Communicator::check_send_recv(int from, int to) const {
  if (from < 0 || from >= size() || to < 0 || to >= size())
    return invalid_argument("send_recv: ranks {} → {} outside a group of {}", from, to, size());
  return {};
}

Status Communicator::check_ranks(const char* what, const std::vector<int>& ranks, size_t n_bufs) const {
  if (ranks.size() != n_bufs || ranks.empty())
    return invalid_argument("{}: {} ranks, {} buffers", what, ranks.size(), n_bufs);
  for (size_t i = 0; i < ranks.size(); ++i) {
    if (ranks[i] < 0 || ranks[i] >= size())
      return invalid_argument("{}: rank {} outside a group of {}", what, ranks[i], size());
    if (std::find(ranks.begin(), ranks.begin() + static_cast<ptrdiff_t>(i), ranks[i]) !=
        ranks.begin() + static_cast<ptrdiff_t>(i))
      return invalid_argument("{}: rank {} named twice", what, ranks[i]);
  }
  return {};
}

void Communicator::count_all_to_all(size_t k, const std::vector<uint64_t>& bytes) {
  uint64_t n = 0;
  for (size_t i = 0; i < k; ++i)
    for (size_t j = 0; j < k; ++j)
      if (i != j) n += bytes[i * k + j];
  count(Collective::kAllToAll, n);
}

// Moves what send_recv and all_reduce_sum counted during its life into `as`, as one call.
class Communicator::CountAs {
 public:
  CountAs(Communicator& c, Collective as) : c_(c), as_(as), before_(c.bytes_), calls_before_(c.calls_) {}
  ~CountAs() {
    uint64_t moved = 0;
    bool called = false;
    for (Collective under : {Collective::kSendRecv, Collective::kAllReduce}) {
      const auto u = static_cast<size_t>(under);
      moved += c_.bytes_[u] - before_[u];
      called = called || c_.calls_[u] != calls_before_[u];
      c_.bytes_[u] = before_[u];
      c_.calls_[u] = calls_before_[u];
    }
    if (called) c_.count(as_, moved);
  }

 private:
  Communicator& c_;
  Collective as_;
  std::array<uint64_t, static_cast<size_t>(Collective::kCount)> before_, calls_before_;
};

Status Communicator::all_gather(const std::vector<int>& ranks, const std::vector<void*>& bufs, size_t part) {
  CAI_TRY(check_ranks("all_gather", ranks, bufs.size()));
  CountAs as(*this, Collective::kAllGather);
  for (size_t i = 0; i < ranks.size(); ++i)
    for (size_t j = 0; j < ranks.size(); ++j) {
      if (i == j) continue;
      const void* src = static_cast<const uint8_t*>(bufs[j]) + j * part;
      CAI_TRY(send_recv(ranks[j], src, ranks[i], static_cast<uint8_t*>(bufs[i]) + j * part, part));
    }
  return {};
}

// Each buffer becomes the sum of all of them, so part i of bufs[i] holds what a reduce-scatter leaves there.
Status Communicator::reduce_scatter_sum(const std::vector<int>& ranks, const std::vector<float*>& bufs, size_t n) {
  CAI_TRY(check_ranks("reduce_scatter_sum", ranks, bufs.size()));
  CountAs as(*this, Collective::kReduceScatter);
  return all_reduce_sum(ranks, bufs, ranks.size() * n);
}

Status Communicator::broadcast(const std::vector<int>& ranks, const std::vector<void*>& bufs, size_t n, int root) {
  CAI_TRY(check_ranks("broadcast", ranks, bufs.size()));
  if (root < 0 || static_cast<size_t>(root) >= ranks.size())
    return invalid_argument("broadcast: root {} outside {} ranks", root, ranks.size());
  CountAs as(*this, Collective::kBroadcast);
  const auto r = static_cast<size_t>(root);
  for (size_t i = 0; i < ranks.size(); ++i)
    if (i != r) CAI_TRY(send_recv(ranks[r], bufs[r], ranks[i], bufs[i], n));
  return {};
}

Status Communicator::all_to_all(const std::vector<int>& ranks, const std::vector<const void*>& send,
                                const std::vector<void*>& recv, const std::vector<uint64_t>& bytes) {
  CAI_TRY(check_ranks("all_to_all", ranks, send.size()));
  const size_t k = ranks.size();
  if (recv.size() != k || bytes.size() != k * k)
    return invalid_argument("all_to_all: {} ranks, {} receive buffers, {} counts", k, recv.size(), bytes.size());
  CountAs as(*this, Collective::kAllToAll);
  std::vector<uint64_t> sent(k, 0), received(k, 0);  // the parts so far of each send and receive buffer
  for (size_t i = 0; i < k; ++i)
    for (size_t j = 0; j < k; ++j) {
      const uint64_t b = bytes[i * k + j];
      const void* src = static_cast<const uint8_t*>(send[i]) + sent[i];
      CAI_TRY(send_recv(ranks[i], src, ranks[j], static_cast<uint8_t*>(recv[j]) + received[j], b));
      sent[i] += b;
      received[j] += b;
    }
  return {};
}

}  // namespace cai::hal
