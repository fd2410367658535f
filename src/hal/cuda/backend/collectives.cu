// The backend's collectives (CaiCollectives): NCCL (libnccl.so.2) on CUDA and RCCL (librccl.so.1, the same API) on
// HIP, opened with dlopen at run time so the plugins build and load without them; on simt a stand-in with the same
// contract that sums in rank order through the devices' own copies, so the engine's use of the table is tested without
// a GPU.
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

// The ranks of a communicator; the all-reduce stages through host memory in rank order.
struct SimtComm {
  std::vector<GpuDevice*> ranks;
  std::vector<float> sum, part;
};

int comm_create(const CaiDeviceHandle* devices, int32_t n, CaiCommHandle* out, CaiError* err) {
  return plugin::guarded(err, "comm_create", [&]() -> int {
    auto comm = std::make_unique<SimtComm>();
    for (int32_t i = 0; i < n; ++i) comm->ranks.push_back(&device_of(devices[i]));
    *out = comm.release();
    return CAI_OK;
  });
}

void comm_destroy(CaiCommHandle comm) { delete static_cast<SimtComm*>(comm); }

int all_reduce_sum_f32(CaiCommHandle handle, float* const* bufs, uint64_t count, CaiError* err) {
  return plugin::guarded(err, "all_reduce_sum_f32", [&]() -> int {
    SimtComm& c = *static_cast<SimtComm*>(handle);
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

const CaiCollectives kCollectives = {sizeof(CaiCollectives), "simt collectives (in-plugin, rank order)", comm_create,
                                     comm_destroy, all_reduce_sum_f32};

#else

// The few NCCL calls used, declared here (RCCL exports the same names) so that no header or link-time library is
// needed. Each returns 0 (ncclSuccess) on success.
using NcclComm = void*;
constexpr int kNcclFloat32 = 7;  // ncclFloat32
constexpr int kNcclSum = 0;      // ncclSum

struct Nccl {
  int (*comm_init_all)(NcclComm*, int, const int*);
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
        load_symbol(lib, "ncclCommInitAll", &n.comm_init_all) && load_symbol(lib, "ncclAllReduce", &n.all_reduce) &&
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
const CaiCollectives kCollectives = {sizeof(CaiCollectives), "RCCL (librccl.so.1)", comm_create, comm_destroy,
                                     all_reduce_sum_f32};
#else
const CaiCollectives kCollectives = {sizeof(CaiCollectives), "NCCL (libnccl.so.2)", comm_create, comm_destroy,
                                     all_reduce_sum_f32};
#endif

#endif

}  // namespace

const CaiCollectives* collectives() { return &kCollectives; }

}  // namespace cai::gpu
