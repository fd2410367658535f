// The backend's collectives (CaiCollectives): NCCL (libnccl.so.2) on CUDA and RCCL (librccl.so.1, the same API) on
// HIP, opened with dlopen at run time so the plugins build and load without them; on simt a stand-in with the same
// contract that sums in rank order through the devices' own copies, so the engine's use of the table is tested without
// a GPU.
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <thread>
#include <vector>

#include "hal/cuda/backend/gpu_device.h"

#if !defined(CAI_GPU_SIMT)
#include <dlfcn.h>

#include "hal/cuda/backend/dl_symbol.h"
#endif

namespace cai::gpu {

namespace {

GpuDevice& device_of(CaiDeviceHandle h) { return plugin::Device::from<GpuDevice>(h); }

#if defined(CAI_GPU_SIMT)

// The ranks of a communicator; the all-reduce stages through host memory in rank order. Across processes (exchange
// set) this process holds rank `rank`, and the ranks' buffers meet through the engine's host exchange.
struct SimtComm {
  std::vector<GpuDevice*> ranks;
  const CaiHostExchange* exchange = nullptr;
  int n_procs = 1, rank = 0;
  std::atomic<bool> aborted{false};
  std::vector<float> sum, part;
  std::vector<uint8_t> bytes;
};

// CAI_SIMT_COLLECTIVE_HANG=<rank>: across processes, that rank's operations never complete until the communicator is
// aborted, as an NCCL call whose peer died waits on the device (what the engine's collective watchdog must end).
int hang_if_asked(SimtComm& c, CaiError* err) {
  const char* hang = std::getenv("CAI_SIMT_COLLECTIVE_HANG");
  if (!hang || std::atoi(hang) != c.rank) return CAI_OK;
  while (!c.aborted.load()) std::this_thread::sleep_for(std::chrono::milliseconds(10));
  return fail(err, CAI_ERR_UNAVAILABLE, "the communicator was aborted");
}

constexpr uint32_t kSimtIdBytes = 16;

int comm_create(const CaiDeviceHandle* devices, int32_t n, CaiCommHandle* out, CaiError* err) {
  return plugin::guarded(err, "comm_create", [&]() -> int {
    auto comm = std::make_unique<SimtComm>();
    for (int32_t i = 0; i < n; ++i) comm->ranks.push_back(&device_of(devices[i]));
    *out = comm.release();
    return CAI_OK;
  });
}

void comm_destroy(CaiCommHandle comm) { delete static_cast<SimtComm*>(comm); }

// An id no other job shares: the process id and a count.
int comm_unique_id(void* id, CaiError* err) {
  return plugin::guarded(err, "comm_unique_id", [&]() -> int {
    if (!id) return CAI_OK;  // the stand-in is always there
    static uint64_t made = 0;
    const uint64_t words[2] = {static_cast<uint64_t>(getpid()), ++made};
    std::memcpy(id, words, kSimtIdBytes);
    return CAI_OK;
  });
}

// Joins by checking, through the exchange, that every process was given the same id.
int comm_init_rank(const void* id, int32_t n_ranks, int32_t rank, CaiDeviceHandle device,
                   const CaiHostExchange* exchange, CaiCommHandle* out, CaiError* err) {
  return plugin::guarded(err, "comm_init_rank", [&]() -> int {
    if (!exchange || !exchange->all_gather || n_ranks < 1 || rank < 0 || rank >= n_ranks)
      return fail(
          err, CAI_ERR_INVALID_ARGUMENT, "rank %d of %d%s", rank, n_ranks,
          exchange && exchange->all_gather ? "" : ", without the host exchange the stand-in moves data through");
    std::vector<uint8_t> ids(static_cast<size_t>(n_ranks) * kSimtIdBytes);
    if (exchange->all_gather(exchange->ctx, id, ids.data(), kSimtIdBytes))
      return fail(err, CAI_ERR_UNAVAILABLE, "the host exchange failed while joining");
    for (int32_t r = 0; r < n_ranks; ++r)
      if (std::memcmp(ids.data() + static_cast<size_t>(r) * kSimtIdBytes, id, kSimtIdBytes) != 0)
        return fail(err, CAI_ERR_INVALID_ARGUMENT, "rank %d joined with another unique id than rank %d", r, rank);
    auto comm = std::make_unique<SimtComm>();
    comm->ranks.push_back(&device_of(device));
    comm->exchange = exchange;
    comm->n_procs = n_ranks;
    comm->rank = rank;
    *out = comm.release();
    return CAI_OK;
  });
}

// This process's buffer to host memory, every process's through the exchange, their sum in rank order back.
int all_reduce_across(SimtComm& c, float* buf, size_t n, CaiError* err) {
  if (int rc = hang_if_asked(c, err)) return rc;
  const size_t bytes = n * sizeof(float);
  c.part.resize(n);
  c.sum.resize(n * static_cast<size_t>(c.n_procs));
  if (int rc = c.ranks.front()->copy_to_host(c.part.data(), buf, bytes, err)) return rc;
  if (c.exchange->all_gather(c.exchange->ctx, c.part.data(), c.sum.data(), bytes))
    return fail(err, CAI_ERR_UNAVAILABLE, "the host exchange failed");
  for (int r = 1; r < c.n_procs; ++r)
    for (size_t i = 0; i < n; ++i) c.sum[i] += c.sum[static_cast<size_t>(r) * n + i];
  return c.ranks.front()->copy_to_device(buf, c.sum.data(), bytes, err);
}

int all_reduce_sum_f32(CaiCommHandle handle, float* const* bufs, uint64_t count, CaiError* err) {
  return plugin::guarded(err, "all_reduce_sum_f32", [&]() -> int {
    SimtComm& c = *static_cast<SimtComm*>(handle);
    if (c.exchange) return all_reduce_across(c, bufs[0], static_cast<size_t>(count), err);
    const size_t n = static_cast<size_t>(count), bytes = n * sizeof(float);
    c.sum.assign(n, 0.0f);
    c.part.resize(n);
    for (size_t r = 0; r < c.ranks.size(); ++r) {
      if (int rc = c.ranks[r]->copy_to_host(c.part.data(), bufs[r], bytes, err)) return rc;
      for (size_t i = 0; i < n; ++i) c.sum[i] = r == 0 ? c.part[i] : c.sum[i] + c.part[i];
    }
    for (size_t r = 0; r < c.ranks.size(); ++r)
      if (int rc = c.ranks[r]->copy_to_device(bufs[r], c.sum.data(), bytes, err)) return rc;
    return CAI_OK;
  });
}

// Point to point through the host exchange between the communicator's two processes: the sender's bytes, and the
// receiver's as many zeros, gathered on both; the receiver keeps the sender's.
int exchange_pair(SimtComm& c, const void* send_buf, void* recv_buf, size_t n, int peer, CaiError* err) {
  if (!c.exchange || c.n_procs != 2 || peer != 1 - c.rank)
    return fail(err, CAI_ERR_INVALID_ARGUMENT, "send/recv: the stand-in moves bytes between the two ranks of a pair");
  if (int rc = hang_if_asked(c, err)) return rc;
  GpuDevice& d = *c.ranks.front();
  std::vector<uint8_t> mine(n, 0);
  if (send_buf)
    if (int rc = d.copy_to_host(mine.data(), send_buf, n, err)) return rc;
  c.bytes.resize(2 * n);
  if (c.exchange->all_gather(c.exchange->ctx, mine.data(), c.bytes.data(), n))
    return fail(err, CAI_ERR_UNAVAILABLE, "the host exchange failed");
  return recv_buf ? d.copy_to_device(recv_buf, c.bytes.data() + static_cast<size_t>(peer) * n, n, err) : CAI_OK;
}

int send(CaiCommHandle handle, const void* buf, uint64_t bytes, int32_t peer, CaiError* err) {
  return plugin::guarded(err, "send", [&]() -> int {
    return exchange_pair(*static_cast<SimtComm*>(handle), buf, nullptr, static_cast<size_t>(bytes), peer, err);
  });
}

int recv(CaiCommHandle handle, void* buf, uint64_t bytes, int32_t peer, CaiError* err) {
  return plugin::guarded(err, "recv", [&]() -> int {
    return exchange_pair(*static_cast<SimtComm*>(handle), nullptr, buf, static_cast<size_t>(bytes), peer, err);
  });
}

void comm_abort(CaiCommHandle handle) { static_cast<SimtComm*>(handle)->aborted = true; }

// The rest stage every rank's buffer region through host memory: `n` bytes at `offset(r)` of each rank's buffer into
// c.bytes, by rank (across processes, this process's through the exchange).
template <class Offset>
int gather_regions(SimtComm& c, const void* const* bufs, size_t n, Offset offset, CaiError* err) {
  const auto at = [](const void* p, size_t off) { return static_cast<const uint8_t*>(p) + off; };
  if (c.exchange) {
    if (int rc = hang_if_asked(c, err)) return rc;
    std::vector<uint8_t> mine(n);
    if (int rc = c.ranks.front()->copy_to_host(mine.data(), at(bufs[0], offset(c.rank)), n, err)) return rc;
    c.bytes.resize(n * static_cast<size_t>(c.n_procs));
    if (c.exchange->all_gather(c.exchange->ctx, mine.data(), c.bytes.data(), n))
      return fail(err, CAI_ERR_UNAVAILABLE, "the host exchange failed");
    return CAI_OK;
  }
  c.bytes.resize(n * c.ranks.size());
  for (size_t r = 0; r < c.ranks.size(); ++r)
    if (int rc = c.ranks[r]->copy_to_host(c.bytes.data() + r * n, at(bufs[r], offset(static_cast<int>(r))), n, err))
      return rc;
  return CAI_OK;
}

// This process's ranks: (index into bufs, rank in the communicator).
template <class F>
int for_my_ranks(SimtComm& c, F f) {
  if (c.exchange) return f(size_t{0}, c.rank);
  for (size_t r = 0; r < c.ranks.size(); ++r)
    if (int rc = f(r, static_cast<int>(r))) return rc;
  return CAI_OK;
}

int n_ranks(const SimtComm& c) { return c.exchange ? c.n_procs : static_cast<int>(c.ranks.size()); }

int all_gather(CaiCommHandle handle, void* const* bufs, uint64_t bytes, CaiError* err) {
  return plugin::guarded(err, "all_gather", [&]() -> int {
    SimtComm& c = *static_cast<SimtComm*>(handle);
    const size_t part = static_cast<size_t>(bytes);
    if (int rc = gather_regions(
            c, bufs, part, [&](int r) { return r * part; }, err))
      return rc;
    return for_my_ranks(c, [&](size_t i, int) -> int {
      return c.ranks[i]->copy_to_device(bufs[i], c.bytes.data(), c.bytes.size(), err);
    });
  });
}

int reduce_scatter_sum_f32(CaiCommHandle handle, float* const* bufs, uint64_t count, CaiError* err) {
  return plugin::guarded(err, "reduce_scatter_sum_f32", [&]() -> int {
    SimtComm& c = *static_cast<SimtComm*>(handle);
    const size_t n = static_cast<size_t>(count), k = static_cast<size_t>(n_ranks(c)), whole = k * n * sizeof(float);
    if (int rc = gather_regions(
            c, reinterpret_cast<void* const*>(bufs), whole, [](int) { return size_t{0}; }, err))
      return rc;
    const auto* all = reinterpret_cast<const float*>(c.bytes.data());  // rank r's buffer at r × k × n
    return for_my_ranks(c, [&](size_t i, int rank) -> int {
      const size_t part = static_cast<size_t>(rank) * n;
      c.sum.assign(all + part, all + part + n);
      for (size_t r = 1; r < k; ++r)
        for (size_t j = 0; j < n; ++j) c.sum[j] += all[r * k * n + part + j];
      return c.ranks[i]->copy_to_device(bufs[i] + part, c.sum.data(), n * sizeof(float), err);
    });
  });
}

int broadcast(CaiCommHandle handle, void* const* bufs, uint64_t bytes, int32_t root, CaiError* err) {
  return plugin::guarded(err, "broadcast", [&]() -> int {
    SimtComm& c = *static_cast<SimtComm*>(handle);
    if (root < 0 || root >= n_ranks(c)) return fail(err, CAI_ERR_INVALID_ARGUMENT, "broadcast from rank %d", root);
    const size_t n = static_cast<size_t>(bytes);
    if (int rc = gather_regions(
            c, bufs, n, [](int) { return size_t{0}; }, err))
      return rc;
    const uint8_t* from = c.bytes.data() + static_cast<size_t>(root) * n;
    return for_my_ranks(c, [&](size_t i, int rank) -> int {
      return rank == root ? CAI_OK : c.ranks[i]->copy_to_device(bufs[i], from, n, err);
    });
  });
}

int all_to_all(CaiCommHandle handle, const void* const* send, void* const* recv, const uint64_t* bytes, CaiError* err) {
  return plugin::guarded(err, "all_to_all", [&]() -> int {
    SimtComm& c = *static_cast<SimtComm*>(handle);
    const size_t k = static_cast<size_t>(n_ranks(c));
    std::vector<size_t> row(k, 0);  // what each rank sends in all
    for (size_t i = 0; i < k; ++i)
      for (size_t j = 0; j < k; ++j) row[i] += static_cast<size_t>(bytes[i * k + j]);
    const size_t widest = *std::max_element(row.begin(), row.end());
    // Each rank's send buffer padded to the widest; a sender's region past its row is read as far as it reaches.
    std::vector<uint8_t> sent;
    if (c.exchange) {
      if (int rc = hang_if_asked(c, err)) return rc;
      std::vector<uint8_t> mine(widest, 0);
      if (int rc = c.ranks.front()->copy_to_host(mine.data(), send[0], row[static_cast<size_t>(c.rank)], err))
        return rc;
      sent.resize(widest * k);
      if (c.exchange->all_gather(c.exchange->ctx, mine.data(), sent.data(), widest))
        return fail(err, CAI_ERR_UNAVAILABLE, "the host exchange failed");
    } else {
      sent.assign(widest * k, 0);
      for (size_t r = 0; r < k; ++r)
        if (int rc = c.ranks[r]->copy_to_host(sent.data() + r * widest, send[r], row[r], err)) return rc;
    }
    return for_my_ranks(c, [&](size_t i, int rank) -> int {
      const size_t j = static_cast<size_t>(rank);
      size_t at = 0;
      for (size_t s = 0; s < k; ++s) {
        size_t from = 0;  // where sender s's part for j starts
        for (size_t t = 0; t < j; ++t) from += static_cast<size_t>(bytes[s * k + t]);
        const size_t n = static_cast<size_t>(bytes[s * k + j]);
        if (n)
          if (int rc = c.ranks[i]->copy_to_device(static_cast<uint8_t*>(recv[i]) + at, sent.data() + s * widest + from,
                                                  n, err))
            return rc;
        at += n;
      }
      return CAI_OK;
    });
  });
}

const CaiCollectives kCollectives = {sizeof(CaiCollectives),
                                     "simt collectives (in-plugin, rank order)",
                                     comm_create,
                                     comm_destroy,
                                     all_reduce_sum_f32,
                                     kSimtIdBytes,
                                     comm_unique_id,
                                     comm_init_rank,
                                     send,
                                     recv,
                                     comm_abort,
                                     all_gather,
                                     reduce_scatter_sum_f32,
                                     broadcast,
                                     all_to_all};

#else

// The few NCCL calls used, declared here (RCCL exports the same names) so that no header or link-time library is
// needed. Each returns 0 (ncclSuccess) on success.
using NcclComm = void*;
struct NcclUniqueId {  // ncclUniqueId, passed by value to ncclCommInitRank
  char internal[128];
};
constexpr int kNcclFloat32 = 7;  // ncclFloat32
constexpr int kNcclSum = 0;      // ncclSum

struct Nccl {
  int (*comm_init_all)(NcclComm*, int, const int*);
  int (*get_unique_id)(NcclUniqueId*);
  int (*comm_init_rank)(NcclComm*, int, NcclUniqueId, int);
  int (*all_reduce)(const void*, void*, size_t, int, int, NcclComm, gpuStream_t);
  int (*group_start)();
  int (*group_end)();
  int (*comm_destroy)(NcclComm);
  const char* (*error_string)(int);
  // Optional: point to point (NCCL 2.7+) and abort; null where the library lacks them.
  int (*send)(const void*, size_t, int, int, NcclComm, gpuStream_t) = nullptr;
  int (*recv)(void*, size_t, int, int, NcclComm, gpuStream_t) = nullptr;
  int (*comm_abort)(NcclComm) = nullptr;
  // Optional: the collectives beyond all-reduce; null where the library lacks one of them.
  int (*all_gather)(const void*, void*, size_t, int, NcclComm, gpuStream_t) = nullptr;
  int (*reduce_scatter)(const void*, void*, size_t, int, int, NcclComm, gpuStream_t) = nullptr;
  int (*broadcast)(const void*, void*, size_t, int, int, NcclComm, gpuStream_t) = nullptr;
};

#if defined(CAI_GPU_HIP)
constexpr const char* kLibrary = "librccl.so.1";
#else
constexpr const char* kLibrary = "libnccl.so.2";
#endif

// Loaded once per process; null when the library is missing.
const Nccl* nccl() {
  static const Nccl* loaded = []() -> const Nccl* {
    void* lib = dlopen(kLibrary, RTLD_NOW | RTLD_LOCAL);
    if (!lib) return nullptr;
    static Nccl n{};
    const bool ok =
        load_symbol(lib, "ncclCommInitAll", &n.comm_init_all) &&
        load_symbol(lib, "ncclGetUniqueId", &n.get_unique_id) &&
        load_symbol(lib, "ncclCommInitRank", &n.comm_init_rank) && load_symbol(lib, "ncclAllReduce", &n.all_reduce) &&
        load_symbol(lib, "ncclGroupStart", &n.group_start) && load_symbol(lib, "ncclGroupEnd", &n.group_end) &&
        load_symbol(lib, "ncclCommDestroy", &n.comm_destroy) && load_symbol(lib, "ncclGetErrorString", &n.error_string);
    if (ok && !(load_symbol(lib, "ncclSend", &n.send) && load_symbol(lib, "ncclRecv", &n.recv))) n.send = nullptr;
    if (ok && !load_symbol(lib, "ncclCommAbort", &n.comm_abort)) n.comm_abort = nullptr;
    if (ok &&
        !(load_symbol(lib, "ncclAllGather", &n.all_gather) &&
          load_symbol(lib, "ncclReduceScatter", &n.reduce_scatter) && load_symbol(lib, "ncclBroadcast", &n.broadcast)))
      n.all_gather = nullptr;
    return ok ? &n : nullptr;
  }();
  return loaded;
}

struct NcclRanks {
  std::vector<GpuDevice*> ranks;  // this process's, in rank order from first_rank
  std::vector<NcclComm> comms;
  int first_rank = 0, n_ranks = 0;
  std::atomic<bool> aborted{false};  // ncclCommAbort freed the communicators
};

int nccl_fail(CaiError* err, int rc, const char* what) {
  return fail(err, CAI_ERR_INTERNAL, "%s: %s", what, nccl()->error_string(rc));
}

int comm_create(const CaiDeviceHandle* devices, int32_t n, CaiCommHandle* out, CaiError* err) {
  return plugin::guarded(err, "comm_create", [&]() -> int {
    if (!nccl()) return fail(err, CAI_ERR_UNAVAILABLE, "%s is not installed (or lacks the NCCL calls)", kLibrary);
    auto c = std::make_unique<NcclRanks>();
    std::vector<int> indices;
    for (int32_t i = 0; i < n; ++i) {
      c->ranks.push_back(&device_of(devices[i]));
      indices.push_back(c->ranks.back()->index());
    }
    c->comms.resize(static_cast<size_t>(n));
    c->n_ranks = n;
    if (int rc = nccl()->comm_init_all(c->comms.data(), n, indices.data()))
      return nccl_fail(err, rc, "ncclCommInitAll");
    *out = c.release();
    return CAI_OK;
  });
}

int comm_unique_id(void* id, CaiError* err) {
  return plugin::guarded(err, "comm_unique_id", [&]() -> int {
    if (!nccl()) return fail(err, CAI_ERR_UNAVAILABLE, "%s is not installed (or lacks the NCCL calls)", kLibrary);
    if (!id) return CAI_OK;
    NcclUniqueId made{};
    if (int rc = nccl()->get_unique_id(&made)) return nccl_fail(err, rc, "ncclGetUniqueId");
    std::memcpy(id, &made, sizeof made);
    return CAI_OK;
  });
}

// The library brings its own transport between the processes: the host exchange is not needed.
int comm_init_rank(const void* id, int32_t n_ranks, int32_t rank, CaiDeviceHandle device, const CaiHostExchange*,
                   CaiCommHandle* out, CaiError* err) {
  return plugin::guarded(err, "comm_init_rank", [&]() -> int {
    if (!nccl()) return fail(err, CAI_ERR_UNAVAILABLE, "%s is not installed (or lacks the NCCL calls)", kLibrary);
    auto c = std::make_unique<NcclRanks>();
    c->ranks.push_back(&device_of(device));
    if (int rc = c->ranks.front()->activate(err)) return rc;
    NcclUniqueId joined;
    std::memcpy(&joined, id, sizeof joined);
    c->comms.resize(1);
    c->first_rank = rank;
    c->n_ranks = n_ranks;
    if (int rc = nccl()->comm_init_rank(&c->comms[0], n_ranks, joined, rank))
      return nccl_fail(err, rc, "ncclCommInitRank");
    *out = c.release();
    return CAI_OK;
  });
}

void comm_destroy(CaiCommHandle handle) {
  auto* c = static_cast<NcclRanks*>(handle);
  if (!c->aborted)
    for (NcclComm comm : c->comms) (void)nccl()->comm_destroy(comm);
  delete c;
}

// One grouped call over this process's ranks: call(i, rank, comm, stream) queues rank's part (bufs[i]) and returns
// NCCL's code.
template <class F>
int grouped(NcclRanks& c, const char* what, CaiError* err, F call) {
  if (int rc = nccl()->group_start()) return nccl_fail(err, rc, "ncclGroupStart");
  int failed = 0, not_active = CAI_OK;
  for (size_t i = 0; i < c.ranks.size() && !failed && !not_active; ++i) {
    not_active = c.ranks[i]->activate(err);
    if (!not_active) failed = call(i, c.first_rank + static_cast<int>(i), c.comms[i], c.ranks[i]->context().stream);
  }
  const int ended = nccl()->group_end();  // always closes the group it opened
  if (not_active) return not_active;
  if (failed) return nccl_fail(err, failed, what);
  return ended ? nccl_fail(err, ended, "ncclGroupEnd") : CAI_OK;
}

int all_reduce_sum_f32(CaiCommHandle handle, float* const* bufs, uint64_t count, CaiError* err) {
  return plugin::guarded(err, "all_reduce_sum_f32", [&]() -> int {
    return grouped(
        *static_cast<NcclRanks*>(handle), "ncclAllReduce", err, [&](size_t i, int, NcclComm comm, gpuStream_t stream) {
          return nccl()->all_reduce(bufs[i], bufs[i], static_cast<size_t>(count), kNcclFloat32, kNcclSum, comm, stream);
        });
  });
}

constexpr int kNcclInt8 = 0;  // ncclInt8: the collectives that move bytes

int lacks_gather_scatter(CaiError* err) {
  return fail(err, CAI_ERR_UNSUPPORTED, "%s lacks ncclAllGather / ncclReduceScatter / ncclBroadcast", kLibrary);
}

int all_gather(CaiCommHandle handle, void* const* bufs, uint64_t bytes, CaiError* err) {
  return plugin::guarded(err, "all_gather", [&]() -> int {
    if (!nccl()->all_gather) return lacks_gather_scatter(err);
    const size_t part = static_cast<size_t>(bytes);
    return grouped(*static_cast<NcclRanks*>(handle), "ncclAllGather", err,
                   [&](size_t i, int rank, NcclComm comm, gpuStream_t stream) {
                     const auto* mine = static_cast<const uint8_t*>(bufs[i]) + static_cast<size_t>(rank) * part;
                     return nccl()->all_gather(mine, bufs[i], part, kNcclInt8, comm, stream);
                   });
  });
}

int reduce_scatter_sum_f32(CaiCommHandle handle, float* const* bufs, uint64_t count, CaiError* err) {
  return plugin::guarded(err, "reduce_scatter_sum_f32", [&]() -> int {
    if (!nccl()->reduce_scatter) return lacks_gather_scatter(err);
    const size_t n = static_cast<size_t>(count);
    return grouped(*static_cast<NcclRanks*>(handle), "ncclReduceScatter", err,
                   [&](size_t i, int rank, NcclComm comm, gpuStream_t stream) {
                     return nccl()->reduce_scatter(bufs[i], bufs[i] + static_cast<size_t>(rank) * n, n, kNcclFloat32,
                                                   kNcclSum, comm, stream);
                   });
  });
}

int broadcast(CaiCommHandle handle, void* const* bufs, uint64_t bytes, int32_t root, CaiError* err) {
  return plugin::guarded(err, "broadcast", [&]() -> int {
    if (!nccl()->broadcast) return lacks_gather_scatter(err);
    return grouped(
        *static_cast<NcclRanks*>(handle), "ncclBroadcast", err, [&](size_t i, int, NcclComm comm, gpuStream_t stream) {
          return nccl()->broadcast(bufs[i], bufs[i], static_cast<size_t>(bytes), kNcclInt8, root, comm, stream);
        });
  });
}

// Every rank's sends and receives in one group (NCCL pairs them, its own part included).
int all_to_all(CaiCommHandle handle, const void* const* send, void* const* recv, const uint64_t* bytes, CaiError* err) {
  return plugin::guarded(err, "all_to_all", [&]() -> int {
    if (!nccl()->send || !nccl()->recv) return fail(err, CAI_ERR_UNSUPPORTED, "%s lacks ncclSend / ncclRecv", kLibrary);
    NcclRanks& c = *static_cast<NcclRanks*>(handle);
    const size_t k = static_cast<size_t>(c.n_ranks);
    return grouped(c, "ncclSend / ncclRecv", err, [&](size_t i, int rank, NcclComm comm, gpuStream_t stream) {
      const size_t me = static_cast<size_t>(rank);
      size_t out = 0, in = 0;
      for (size_t peer = 0; peer < k; ++peer) {
        const size_t to = static_cast<size_t>(bytes[me * k + peer]), from = static_cast<size_t>(bytes[peer * k + me]);
        if (to)
          if (int rc = nccl()->send(static_cast<const uint8_t*>(send[i]) + out, to, kNcclInt8, static_cast<int>(peer),
                                    comm, stream))
            return rc;
        if (from)
          if (int rc = nccl()->recv(static_cast<uint8_t*>(recv[i]) + in, from, kNcclInt8, static_cast<int>(peer), comm,
                                    stream))
            return rc;
        out += to;
        in += from;
      }
      return 0;
    });
  });
}

// Bytes to or from the peer on the one rank's stream (a communicator from comm_init_rank).
int point_to_point(CaiCommHandle handle, const void* send_buf, void* recv_buf, uint64_t bytes, int32_t peer,
                   CaiError* err) {
  NcclRanks& c = *static_cast<NcclRanks*>(handle);
  if (!nccl()->send || !nccl()->recv) return fail(err, CAI_ERR_UNSUPPORTED, "%s lacks ncclSend / ncclRecv", kLibrary);
  if (int rc = c.ranks.front()->activate(err)) return rc;
  const gpuStream_t stream = c.ranks.front()->context().stream;
  const int rc = send_buf ? nccl()->send(send_buf, static_cast<size_t>(bytes), kNcclInt8, peer, c.comms[0], stream)
                          : nccl()->recv(recv_buf, static_cast<size_t>(bytes), kNcclInt8, peer, c.comms[0], stream);
  return rc ? nccl_fail(err, rc, send_buf ? "ncclSend" : "ncclRecv") : CAI_OK;
}

int send(CaiCommHandle handle, const void* buf, uint64_t bytes, int32_t peer, CaiError* err) {
  return plugin::guarded(err, "send", [&]() -> int { return point_to_point(handle, buf, nullptr, bytes, peer, err); });
}

int recv(CaiCommHandle handle, void* buf, uint64_t bytes, int32_t peer, CaiError* err) {
  return plugin::guarded(err, "recv", [&]() -> int { return point_to_point(handle, nullptr, buf, bytes, peer, err); });
}

// ncclCommAbort makes the pending kernels return and the stream's waiters fail; where the library lacks it, nothing
// can end them (the engine still fails the group, and mpirun ends the job).
void comm_abort(CaiCommHandle handle) {
  NcclRanks& c = *static_cast<NcclRanks*>(handle);
  if (!nccl()->comm_abort || c.aborted.exchange(true)) return;
  for (NcclComm comm : c.comms) (void)nccl()->comm_abort(comm);  // frees it: comm_destroy then skips it
}

#if defined(CAI_GPU_HIP)
constexpr const char* kName = "RCCL (librccl.so.1)";
#else
constexpr const char* kName = "NCCL (libnccl.so.2)";
#endif
const CaiCollectives kCollectives = {
    sizeof(CaiCollectives), kName,          comm_create, comm_destroy, all_reduce_sum_f32, sizeof(NcclUniqueId),
    comm_unique_id,         comm_init_rank, send,        recv,         comm_abort,         all_gather,
    reduce_scatter_sum_f32, broadcast,      all_to_all};

#endif

}  // namespace

const CaiCollectives* collectives() { return &kCollectives; }

}  // namespace cai::gpu
