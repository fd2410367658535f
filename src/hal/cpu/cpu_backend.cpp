// CpuDevice: host allocations (64-byte aligned), eager stream, /proc readings for memory, hwmon for temperature.
#include "hal/cpu/cpu_backend.h"

#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <string>

#include "core/thread_pool.h"
#include "hal/completed_event.h"
#include "hal/cpu/hwmon.h"
#include "hal/cpu/kernels/qdot_groups.h"
#include "hal/cpu/kernels/qdot_kernels.h"

namespace cai::hal::cpu {

namespace {

class CpuStream final : public Stream {
 public:
  Status copy_to_device(void* dst, const void* src, size_t n) override {
    std::memcpy(dst, src, n);
    return {};
  }
  Status copy_to_host(void* dst, const void* src, size_t n) override {
    std::memcpy(dst, src, n);
    return {};
  }
  Status synchronize() override { return {}; }
  std::unique_ptr<Event> record() override { return std::make_unique<CompletedEvent>(); }
};

// Reads "MemTotal:  123 kB" style lines.
size_t meminfo_bytes(const char* key) {
  std::ifstream in("/proc/meminfo");
  std::string name;
  size_t kb = 0;
  std::string unit;
  while (in >> name >> kb >> unit)
    if (name == key) return kb * 1024;
  return 0;
}

// Backs [p, p + n) with memory (MADV_POPULATE_WRITE, Linux 5.14) instead of a page fault per 4 KiB as it is first
// written: on a VM whose memory the hypervisor backs lazily (a Firecracker guest) that costs far less per GiB (the
// load time `cai bench` prints). The range is split into 2 MiB pieces over the pool's threads, which zero their pages
// in parallel.
// A hint: where the kernel lacks it, the writes fault the pages in.
void prefault(void* p, size_t n, ThreadPool* pool) {
#ifdef MADV_POPULATE_WRITE
  const uintptr_t page = static_cast<uintptr_t>(::sysconf(_SC_PAGESIZE));
  const uintptr_t begin = (reinterpret_cast<uintptr_t>(p) + page - 1) / page * page;
  const uintptr_t end = (reinterpret_cast<uintptr_t>(p) + n) / page * page;
  if (end <= begin) return;
  constexpr uintptr_t kPiece = uintptr_t{2} << 20;
  const auto populate = [&](int64_t i0, int64_t i1) {
    const uintptr_t a = begin + static_cast<uintptr_t>(i0) * kPiece;
    const uintptr_t b = std::min(end, begin + static_cast<uintptr_t>(i1) * kPiece);
    ::madvise(reinterpret_cast<void*>(a), b - a, MADV_POPULATE_WRITE);
  };
  const auto n_pieces = static_cast<int64_t>((end - begin + kPiece - 1) / kPiece);
  if (pool && pool->size() > 1)
    pool->parallel_for(n_pieces, 1, populate);
  else
    populate(0, n_pieces);
#else
  (void)p;
  (void)n;
  (void)pool;
#endif
}

class CpuDevice final : public Device {
  static constexpr size_t kHugePage = size_t{2} << 20;

 public:
  CpuDevice() : pool_(std::make_unique<ThreadPool>(0)), sensor_(find_cpu_package_sensor(sysfs_root_from_env())) {}
  std::string name() const override { return "cpu:0"; }
  std::string description() const override { return fmt::format("host CPU, {} threads", pool_->size()); }
  MemoryInfo memory_info() const override { return {meminfo_bytes("MemTotal:"), meminfo_bytes("MemAvailable:")}; }
  Telemetry telemetry() const override {
    Telemetry t;
    t.temperature_c = sensor_.read_celsius();
    return t;
  }
  std::string telemetry_sensor() const override { return sensor_.describe(); }
  const OpTable& ops() const override { return cpu_op_table(); }
  Stream& default_stream() override { return stream_; }
  OpContext op_context() override {
    OpContext ctx{pool_.get(), &stream_, batch_invariant_};
    ctx.precision = precision_;
    return ctx;
  }
  void set_batch_invariant(bool on) override { batch_invariant_ = on; }
  void set_precision(Precision p) override { precision_ = p; }
  // Under --precision fast, Q8_0 / Q4_0 / Q2_K .. Q6_K / IQ4_NL / IQ4_XS weights with whole groups of rows become
  // interleaved row groups (qdot_groups.h) where this CPU's integer kernels take them. A stack of experts [E, out, in]
  // is packed as its E · out rows: with out a multiple of the group, no group straddles two experts, so each expert's
  // slice is itself a packed weight.
  bool packs_gemm_weight(const TensorView& w, ActivationGrain grain) const override {
    const DType packed = packed_dtype(w.dtype, grain);
    if (precision_ != Precision::kFast || packed == DType::kCount || (w.n_dims != 2 && w.n_dims != 3) || w.scale ||
        !w.data || w.dim(-2) % kPackedGroupRows != 0 || w.cols() % dtype_info(w.dtype).block_elems != 0)
      return false;
    const QDotKernels& k = active_qdot_kernels();
    return k.dot[static_cast<int>(packed)] || k.dot16[static_cast<int>(packed)];
  }
  Result<TensorView> pack_gemm_weight(const TensorView& w, ActivationGrain grain, void* dst) override {
    if (!packs_gemm_weight(w, grain)) return Device::pack_gemm_weight(w, grain, dst);
    prefault(dst, w.n_bytes(), pool_.get());
    const DType packed_type = packed_dtype(w.dtype, grain);
    pack_row_groups(packed_type, w.as<const uint8_t>(), static_cast<uint8_t*>(dst), w.rows(), w.cols(), pool_.get());
    TensorView packed = w;
    packed.dtype = packed_type;
    packed.data = dst;
    return packed;
  }
  bool host_visible() const override { return true; }
  bool supports_kv_dtype(DType t) const override { return is_kv_cache_dtype(t); }  // Q8_0 included
  // Buffers of 2 MiB and more (packed weights, KV caches) are 2 MiB-aligned and asked to use transparent huge pages
  // (MADV_HUGEPAGE; the kernel's default is often `madvise`): a weight read streams through them once per token, and
  // with 4 KiB pages every 4 KiB of it costs a TLB miss.
  Result<Buffer> allocate(size_t n_bytes, MemoryKind kind) override {
    const size_t align = n_bytes >= kHugePage ? kHugePage : 64;
    const size_t rounded = (n_bytes + align - 1) / align * align;
    void* p = std::aligned_alloc(align, rounded == 0 ? align : rounded);
    if (!p) return out_of_memory("cannot allocate {} bytes of host memory", n_bytes);
#ifdef MADV_HUGEPAGE
    if (align == kHugePage) ::madvise(p, rounded, MADV_HUGEPAGE);
#endif
    return Buffer(this, p, n_bytes, kind);
  }
  void free(void* ptr, MemoryKind) override { std::free(ptr); }
  void set_threads(int n) { pool_ = std::make_unique<ThreadPool>(n); }

 private:
  std::unique_ptr<ThreadPool> pool_;
  CpuPackageSensor sensor_;
  CpuStream stream_;
  bool batch_invariant_ = false;
  Precision precision_ = Precision::kExact;
};

class CpuBackend final : public Backend {
 public:
  std::string name() const override { return "cpu"; }
  std::vector<Device*> devices() override { return {&device_}; }
  std::string runtime() const override { return "built into cai"; }
  CpuDevice& device() { return device_; }

 private:
  CpuDevice device_;
};

CpuBackend* g_cpu_backend = nullptr;

}  // namespace

std::unique_ptr<Backend> make_cpu_backend() {
  auto b = std::make_unique<CpuBackend>();
  if (!g_cpu_backend) g_cpu_backend = b.get();
  return b;
}

void set_cpu_threads(int n_threads) {
  Registry::global();  // make sure the CPU backend exists
  if (g_cpu_backend) g_cpu_backend->device().set_threads(n_threads);
}

}  // namespace cai::hal::cpu
