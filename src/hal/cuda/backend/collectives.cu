// The backend's collectives (CaiCollectives): NCCL (libnccl.so.2) on CUDA and RCCL (librccl.so.1, the same API) on
// HIP, opened with dlopen at run time so the plugins build and load without them; on simt a stand-in with the same
// contract that sums in rank order through the devices' own copies, so the engine's use of the table is tested without
// a GPU.
#include <unistd.h>

#include <cstring>
#include <memory>
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
// set) this process holds one rank, and the ranks' buffers meet through the engine's host exchange.
struct SimtComm {
  std::vector<GpuDevice*> ranks;
  const CaiHostExchange* exchange = nullptr;
  int n_procs = 1;
  std::vector<float> sum, part;
};

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
    *out = comm.release();
    return CAI_OK;
  });
}

// This process's buffer to host memory, every process's through the exchange, their sum in rank order back.
int all_reduce_across(SimtComm& c, float* buf, size_t n, CaiError* err) {
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

const CaiCollectives kCollectives = {sizeof(CaiCollectives),
                                     "simt collectives (in-plugin, rank order)",
                                     comm_create,
                                     comm_destroy,
                                     all_reduce_sum_f32,
                                     kSimtIdBytes,
                                     comm_unique_id,
                                     comm_init_rank};

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
    return ok ? &n : nullptr;
  }();
  return loaded;
}

struct NcclRanks {
  std::vector<GpuDevice*> ranks;
  std::vector<NcclComm> comms;
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
    if (int rc = nccl()->comm_init_rank(&c->comms[0], n_ranks, joined, rank))
      return nccl_fail(err, rc, "ncclCommInitRank");
    *out = c.release();
    return CAI_OK;
  });
}

void comm_destroy(CaiCommHandle handle) {
  auto* c = static_cast<NcclRanks*>(handle);
  for (NcclComm comm : c->comms) (void)nccl()->comm_destroy(comm);
  delete c;
}

// One grouped call over every rank, each on its device's stream.
int all_reduce_sum_f32(CaiCommHandle handle, float* const* bufs, uint64_t count, CaiError* err) {
  return plugin::guarded(err, "all_reduce_sum_f32", [&]() -> int {
    NcclRanks& c = *static_cast<NcclRanks*>(handle);
    if (int rc = nccl()->group_start()) return nccl_fail(err, rc, "ncclGroupStart");
    int failed = 0, not_active = CAI_OK;
    for (size_t r = 0; r < c.ranks.size() && !failed && !not_active; ++r) {
      not_active = c.ranks[r]->activate(err);
      if (!not_active)
        failed = nccl()->all_reduce(bufs[r], bufs[r], static_cast<size_t>(count), kNcclFloat32, kNcclSum, c.comms[r],
                                    c.ranks[r]->context().stream);
    }
    const int ended = nccl()->group_end();  // always closes the group it opened
    if (not_active) return not_active;
    if (failed) return nccl_fail(err, failed, "ncclAllReduce");
    return ended ? nccl_fail(err, ended, "ncclGroupEnd") : CAI_OK;
  });
}

#if defined(CAI_GPU_HIP)
constexpr const char* kName = "RCCL (librccl.so.1)";
#else
constexpr const char* kName = "NCCL (libnccl.so.2)";
#endif
const CaiCollectives kCollectives = {
    sizeof(CaiCollectives), kName,          comm_create,   comm_destroy, all_reduce_sum_f32,
    sizeof(NcclUniqueId),   comm_unique_id, comm_init_rank};

#endif

}  // namespace

const CaiCollectives* collectives() { return &kCollectives; }

}  // namespace cai::gpu
