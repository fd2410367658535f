// Plugin wrappers: C ABI codes → Status, struct_size-aware reads, and the OpTable thunks (TensorView → CaiTensor).
#include "hal/plugin_device.h"

#include <algorithm>
#include <cstddef>
#include <cstring>
#include <type_traits>

#include "core/log.h"

namespace cai::hal {

static_assert(static_cast<int>(DType::kF32) == CAI_DTYPE_F32 && static_cast<int>(DType::kQ6_K) == CAI_DTYPE_Q6_K &&
                  static_cast<int>(DType::kF8_E4M3) == CAI_DTYPE_F8_E4M3 &&
                  static_cast<int>(DType::kI8) == CAI_DTYPE_I8 && static_cast<int>(DType::kQ4_1) == CAI_DTYPE_Q4_1 &&
                  static_cast<int>(DType::kIQ1_M) == CAI_DTYPE_IQ1_M &&
                  static_cast<int>(DType::kQ8_0_R16) == CAI_DTYPE_IQ1_M + 1,
              "DType values are the ABI's CAI_DTYPE_* (the packed CPU layouts after them never reach a plugin)");
static_assert(static_cast<int>(StatusCode::kInvalidArgument) == CAI_ERR_INVALID_ARGUMENT &&
                  static_cast<int>(StatusCode::kOutOfMemory) == CAI_ERR_OUT_OF_MEMORY &&
                  static_cast<int>(StatusCode::kInternal) == CAI_ERR_INTERNAL,
              "StatusCode values are the ABI's CAI_ERR_*");

namespace {

// The fields every ABI v2 device table has (set_batch_invariant, the last one, is optional).
constexpr size_t kMinDeviceSize = offsetof(CaiDevice, event_destroy) + sizeof(CaiDevice::event_destroy);

// Copies the first `struct_size` bytes a plugin wrote (no more than we know of); later fields stay zero (or null).
template <class T>
T read_prefix(const T& src, uint32_t struct_size) {
  T out{};
  std::memcpy(&out, &src, std::min<size_t>(struct_size, sizeof out));
  return out;
}

// A plugin's code as a StatusCode (an unknown code is an internal error) and its message (NUL or not).
StatusCode status_code_of(int code) {
  return code > CAI_OK && code <= CAI_ERR_INTERNAL ? static_cast<StatusCode>(code) : StatusCode::kInternal;
}
std::string message_of(const CaiError& err) {
  return std::string(err.message, strnlen(err.message, sizeof err.message));
}

CaiTensor to_c(const TensorView& t) {
  CaiTensor c{};
  c.data = t.data;
  c.dtype = static_cast<int32_t>(t.dtype);
  c.n_dims = t.n_dims;
  for (size_t i = 0; i < 4; ++i) c.shape[i] = t.shape[i];
  c.scale = t.scale;
  return c;
}

// Converted arguments that live until the end of the plugin call's full expression and decay to what CaiOps takes.
class CTensor {
 public:
  explicit CTensor(const TensorView& t) : t_(to_c(t)) {}
  explicit CTensor(const TensorView* t) : present_(t != nullptr) {
    if (t) t_ = to_c(*t);
  }
  operator const CaiTensor*() const { return present_ ? &t_ : nullptr; }  // NOLINT: implicit by design

 private:
  CaiTensor t_{};
  bool present_ = true;
};

class CBatch {
 public:
  explicit CBatch(const AttnBatch& b) : b_{to_c(b.seqs), to_c(b.block_tables), b.max_q, b.max_ctx} {}
  operator const CaiAttnBatch*() const { return &b_; }  // NOLINT: implicit by design

 private:
  CaiAttnBatch b_;
};

class CExperts {
 public:
  explicit CExperts(const ExpertWeights& w) : w_{to_c(w.gate), to_c(w.up), to_c(w.down), w.expert_begin} {}
  operator const CaiExpertWeights*() const { return &w_; }  // NOLINT: implicit by design

 private:
  CaiExpertWeights w_;
};

// The one body of every thunk: the plugin device travels in OpContext::backend.
template <auto Entry, class... Args>
Status call(const OpContext& ctx, const char* op, const Args&... args) {
  auto* device = static_cast<PluginDevice*>(ctx.backend);
  if (!device) return internal_error("{}: the op context carries no plugin device", op);
  CaiError err{};
  const int code = (device->c_ops().*Entry)(device->c().handle, args..., &err);
  return device->status_of(code, err, op);
}

// An op argument as the C ABI takes it: tensors, batches and expert stacks converted, parameter structs (already
// the ABI's) by pointer, numbers as they are.
CTensor c_arg(const TensorView& t) { return CTensor(t); }
CTensor c_arg(const TensorView* t) { return CTensor(t); }
CBatch c_arg(const AttnBatch& b) { return CBatch(b); }
CExperts c_arg(const ExpertWeights& w) { return CExperts(w); }
template <class T>
auto c_arg(const T& v) {
  if constexpr (std::is_class_v<T>)
    return &v;
  else
    return v;
}

// The thunk of one op: OpTable's signature on the outside, CaiOps' entry inside.
template <auto Entry, OpId Id, class Fn>
struct Thunk;
template <auto Entry, OpId Id, class... Args>
struct Thunk<Entry, Id, Status (*)(const OpContext&, Args...)> {
  static Status run(const OpContext& x, Args... args) { return call<Entry>(x, op_name(Id), c_arg(args)...); }
};

// A thunk for each op the plugin implements; the others stay null (unsupported), as do ops CaiOps has no slot for.
template <class COps>
OpTable thunks_for(const COps& c) {
  OpTable t;
#define CAI_OP_THUNK(op, Id, params) \
  if constexpr (requires { c.op; })  \
    if (c.op) t.op = &Thunk<&COps::op, OpId::k##Id, decltype(OpTable::op)>::run;
  CAI_HAL_OPS(CAI_OP_THUNK)
#undef CAI_OP_THUNK
  return t;
}

// The first required function a device table lacks, or null.
const char* missing_device_function(const CaiDevice& c) {
  if (!c.name) return "name";
  if (!c.allocate) return "allocate";
  if (!c.free) return "free";
  if (!c.copy_to_device) return "copy_to_device";
  if (!c.copy_to_host) return "copy_to_host";
  if (!c.synchronize) return "synchronize";
  if (!c.event_record) return "event_record";
  if (!c.event_wait) return "event_wait";
  if (!c.event_done) return "event_done";
  if (!c.event_destroy) return "event_destroy";
  return nullptr;
}

}  // namespace

// ---- PluginEvent / PluginStream ------------------------------------------------------------------------------------

PluginEvent::PluginEvent(PluginDevice& device, CaiEventHandle handle, Status recorded)
    : device_(device), handle_(handle), recorded_(std::move(recorded)) {
  if (recorded_.ok()) device_.count_live(+1);
}

PluginEvent::~PluginEvent() {
  if (!recorded_.ok()) return;
  device_.c().event_destroy(device_.c().handle, handle_);
  device_.count_live(-1);
}

Status PluginEvent::wait() {
  static_cast<PluginStream&>(device_.default_stream()).count_host_sync();
  if (!recorded_.ok()) return recorded_;
  CaiError err{};
  return device_.status_of(device_.c().event_wait(device_.c().handle, handle_, &err), err, "event_wait");
}

bool PluginEvent::done() const { return !recorded_.ok() || device_.c().event_done(device_.c().handle, handle_) != 0; }

Status PluginStream::copy_to_device(void* dst, const void* src, size_t n) {
  CaiError err{};
  return device_.status_of(device_.c().copy_to_device(device_.c().handle, dst, src, n, &err), err, "copy_to_device");
}

Status PluginStream::copy_to_host(void* dst, const void* src, size_t n) {
  count_host_sync();
  CaiError err{};
  return device_.status_of(device_.c().copy_to_host(device_.c().handle, dst, src, n, &err), err, "copy_to_host");
}

Status PluginStream::synchronize() {
  count_host_sync();
  CaiError err{};
  return device_.status_of(device_.c().synchronize(device_.c().handle, &err), err, "synchronize");
}

std::unique_ptr<Event> PluginStream::record() {
  CaiError err{};
  CaiEventHandle handle = nullptr;
  Status st = device_.status_of(device_.c().event_record(device_.c().handle, &handle, &err), err, "event_record");
  return std::make_unique<PluginEvent>(device_, handle, std::move(st));
}

// ---- PluginDevice --------------------------------------------------------------------------------------------------

Result<std::unique_ptr<PluginDevice>> PluginDevice::create(const CaiDevice& c, const std::string& plugin) {
  if (c.struct_size < kMinDeviceSize)
    return unsupported("plugin {}: device table is {} bytes, ABI v{} needs at least {}", plugin, c.struct_size,
                       CAI_BACKEND_ABI_VERSION, kMinDeviceSize);
  std::unique_ptr<PluginDevice> d(new PluginDevice());
  d->c_ = read_prefix(c, c.struct_size);
  if (const char* missing = missing_device_function(d->c_))
    return invalid_argument("plugin {}: device table lacks '{}'", plugin, missing);
  if (d->c_.ops && d->c_.ops->struct_size >= sizeof(uint32_t))
    d->c_ops_ = read_prefix(*d->c_.ops, d->c_.ops->struct_size);
  d->table_ = thunks_for(d->c_ops_);
  d->name_ = d->c_.name;
  d->description_ = d->c_.description ? d->c_.description : "";
  return d;
}

Status PluginDevice::status_of(int code, const CaiError& err, const char* what) const {
  if (code == CAI_OK) return {};
  const std::string message = message_of(err);
  const StatusCode sc = status_code_of(code);
  const std::string extra =
      sc == StatusCode::kInternal && code != CAI_ERR_INTERNAL ? fmt::format(" (unknown code {})", code) : std::string();
  if (message.empty()) return Status(sc, fmt::format("{}: {} failed{}", name_, what, extra));
  return Status(sc, fmt::format("{}: {}{}", name_, message, extra));
}

MemoryInfo PluginDevice::memory_info() const {
  if (!c_.memory_info) return {};
  CaiError err{};
  uint64_t total = 0, free_bytes = 0;
  Status st = status_of(c_.memory_info(c_.handle, &total, &free_bytes, &err), err, "memory_info");
  if (!st.ok()) {
    CAI_LOG_WARN("{}", st.to_string());
    return {};
  }
  return {static_cast<size_t>(total), static_cast<size_t>(free_bytes)};
}

Telemetry PluginDevice::telemetry() const {
  Telemetry t;
  CaiTelemetry c{};
  CaiError err{};
  if (!c_.telemetry || c_.telemetry(c_.handle, &c, &err) != CAI_OK) return t;
  if (c.valid & CAI_TELEMETRY_TEMPERATURE) t.temperature_c = c.temperature_c;
  if (c.valid & CAI_TELEMETRY_CLOCK) t.clock_mhz = c.clock_mhz;
  if (c.valid & CAI_TELEMETRY_UTILIZATION) t.utilization = c.utilization;
  if (c.valid & CAI_TELEMETRY_POWER) t.power_w = c.power_w;
  return t;
}

// The ABI carries readings, not their source: a plugin that reports a temperature reads its vendor library.
std::string PluginDevice::telemetry_sensor() const {
  if (!telemetry().temperature_c) return {};
  return fmt::format("the {} plugin's vendor telemetry library", name_.substr(0, name_.find(':')));
}

OpContext PluginDevice::op_context() {
  OpContext ctx;
  ctx.stream = &stream_;
  ctx.batch_invariant = batch_invariant_;
  ctx.backend = this;
  return ctx;
}

Result<Buffer> PluginDevice::allocate(size_t n_bytes, MemoryKind kind) {
  CaiError err{};
  void* p = nullptr;
  const int32_t pinned = kind == MemoryKind::kHostPinned ? 1 : 0;
  CAI_TRY(status_of(c_.allocate(c_.handle, n_bytes, pinned, &p, &err), err, "allocate"));
  if (!p && n_bytes > 0) return internal_error("{}: allocate({}) returned no memory and no error", name_, n_bytes);
  if (p) count_live(+1);
  return Buffer(this, p, n_bytes, kind);
}

void PluginDevice::free(void* ptr, MemoryKind kind) {
  if (!ptr) return;
  c_.free(c_.handle, ptr, kind == MemoryKind::kHostPinned ? 1 : 0);
  count_live(-1);
}

void PluginDevice::set_batch_invariant(bool on) {
  batch_invariant_ = on;
  if (c_.set_batch_invariant) c_.set_batch_invariant(c_.handle, on ? 1 : 0);
}

namespace {

// A communicator the plugin made, destroyed with this object: over several of its devices in this process
// (CaiCollectives::comm_create), or across processes (comm_init_rank), with the engine's host exchange kept alive
// beside it for the plugin to call.
// The table's fields up to and including `field` were written by the plugin.
#define CAI_HAS_FIELD(c, field) ((c)->struct_size >= offsetof(CaiCollectives, field) + sizeof((c)->field) && (c)->field)

class PluginCollective final : public NativeCollective {
 public:
  PluginCollective(const CaiCollectives& c, const PluginDevice& first, HostAllGather across = nullptr)
      : c_(c), first_(first), all_gather_(std::move(across)), exchange_{this, &PluginCollective::gather} {}
  ~PluginCollective() override {
    if (comm_) c_.comm_destroy(comm_);
  }
  Status create(const std::vector<CaiDeviceHandle>& devices) {
    CaiError err{};
    return first_.status_of(c_.comm_create(devices.data(), static_cast<int32_t>(devices.size()), &comm_, &err), err,
                            "comm_create");
  }
  Status join(const std::vector<uint8_t>& id, int n_ranks, int rank) {
    CaiError err{};
    return first_.status_of(c_.comm_init_rank(id.data(), n_ranks, rank, first_.c().handle, &exchange_, &comm_, &err),
                            err, "comm_init_rank");
  }
  std::string library() const override {
    return std::string(c_.library ? c_.library : "?") + (all_gather_ ? ", across processes" : "");
  }
  Status all_reduce_sum(const std::vector<float*>& bufs, size_t n) override {
    CaiError err{};
    return first_.status_of(c_.all_reduce_sum_f32(comm_, bufs.data(), n, &err), err, "all_reduce_sum");
  }
  bool can_send_recv() const override { return all_gather_ && CAI_HAS_FIELD(&c_, send) && CAI_HAS_FIELD(&c_, recv); }
  Status send(const void* buf, size_t n, int peer) override {
    if (!can_send_recv()) return unsupported("{}: no send", library());
    CaiError err{};
    return first_.status_of(c_.send(comm_, buf, n, peer, &err), err, "send");
  }
  Status recv(void* buf, size_t n, int peer) override {
    if (!can_send_recv()) return unsupported("{}: no recv", library());
    CaiError err{};
    return first_.status_of(c_.recv(comm_, buf, n, peer, &err), err, "recv");
  }
  void abort() override {
    if (comm_ && CAI_HAS_FIELD(&c_, comm_abort)) c_.comm_abort(comm_);
  }
  bool can_gather_scatter() const override {
    return CAI_HAS_FIELD(&c_, all_gather) && CAI_HAS_FIELD(&c_, reduce_scatter_sum_f32) &&
           CAI_HAS_FIELD(&c_, broadcast) && CAI_HAS_FIELD(&c_, all_to_all);
  }
  Status all_gather(const std::vector<void*>& bufs, size_t part) override {
    if (!can_gather_scatter()) return NativeCollective::all_gather(bufs, part);
    CaiError err{};
    return first_.status_of(c_.all_gather(comm_, bufs.data(), part, &err), err, "all_gather");
  }
  Status reduce_scatter_sum(const std::vector<float*>& bufs, size_t n) override {
    if (!can_gather_scatter()) return NativeCollective::reduce_scatter_sum(bufs, n);
    CaiError err{};
    return first_.status_of(c_.reduce_scatter_sum_f32(comm_, bufs.data(), n, &err), err, "reduce_scatter_sum");
  }
  Status broadcast(const std::vector<void*>& bufs, size_t n, int root) override {
    if (!can_gather_scatter()) return NativeCollective::broadcast(bufs, n, root);
    CaiError err{};
    return first_.status_of(c_.broadcast(comm_, bufs.data(), n, root, &err), err, "broadcast");
  }
  Status all_to_all(const std::vector<const void*>& send, const std::vector<void*>& recv,
                    const std::vector<uint64_t>& bytes) override {
    if (!can_gather_scatter()) return NativeCollective::all_to_all(send, recv, bytes);
    CaiError err{};
    return first_.status_of(c_.all_to_all(comm_, send.data(), recv.data(), bytes.data(), &err), err, "all_to_all");
  }

 private:
  static int gather(void* ctx, const void* mine, void* all, uint64_t bytes) {
    const Status st = static_cast<PluginCollective*>(ctx)->all_gather_(mine, all, static_cast<size_t>(bytes));
    return st.ok() ? CAI_OK : CAI_ERR_UNAVAILABLE;
  }

  const CaiCollectives& c_;
  const PluginDevice& first_;
  HostAllGather all_gather_;
  CaiHostExchange exchange_;
  CaiCommHandle comm_ = nullptr;
};

}  // namespace

Result<std::unique_ptr<NativeCollective>> PluginDevice::native_collective(const std::vector<Device*>& group) {
  const CaiCollectives* c = collectives_;
  if (!c || !CAI_HAS_FIELD(c, comm_create) || !CAI_HAS_FIELD(c, comm_destroy) || !CAI_HAS_FIELD(c, all_reduce_sum_f32))
    return std::unique_ptr<NativeCollective>();
  std::vector<CaiDeviceHandle> handles;
  for (Device* d : group) {
    auto* p = dynamic_cast<PluginDevice*>(d);
    if (!p || p->collectives_ != c) return std::unique_ptr<NativeCollective>();  // another backend among the ranks
    handles.push_back(p->c_.handle);
  }
  auto made = std::make_unique<PluginCollective>(*c, *this);
  CAI_TRY(made->create(handles));
  return std::unique_ptr<NativeCollective>(std::move(made));
}

namespace {

class PluginProcessCollectives final : public ProcessCollectives {
 public:
  PluginProcessCollectives(const CaiCollectives& c, const PluginDevice& device) : c_(c), device_(device) {}
  std::string library() const override { return c_.library ? c_.library : "?"; }
  size_t unique_id_bytes() const override { return c_.unique_id_bytes; }
  Result<std::vector<uint8_t>> unique_id() override {
    std::vector<uint8_t> id(c_.unique_id_bytes);
    CaiError err{};
    CAI_TRY(device_.status_of(c_.comm_unique_id(id.data(), &err), err, "comm_unique_id"));
    return id;
  }
  Result<std::unique_ptr<NativeCollective>> join(const std::vector<uint8_t>& id, int n_ranks, int rank,
                                                 HostAllGather all_gather) override {
    if (id.size() != c_.unique_id_bytes)
      return invalid_argument("{}: a unique id of {} bytes, the library's are {}", device_.name(), id.size(),
                              c_.unique_id_bytes);
    auto joined = std::make_unique<PluginCollective>(c_, device_, std::move(all_gather));
    CAI_TRY(joined->join(id, n_ranks, rank));
    return std::unique_ptr<NativeCollective>(std::move(joined));
  }

 private:
  const CaiCollectives& c_;
  const PluginDevice& device_;
};

}  // namespace

ProcessCollectives* PluginDevice::process_collectives() {
  const CaiCollectives* c = collectives_;
  if (!c || !CAI_HAS_FIELD(c, all_reduce_sum_f32) || !CAI_HAS_FIELD(c, comm_destroy) ||
      !CAI_HAS_FIELD(c, comm_unique_id) || !CAI_HAS_FIELD(c, comm_init_rank) || c->unique_id_bytes == 0)
    return nullptr;
  if (!process_collectives_ && !process_collectives_checked_) {
    process_collectives_checked_ = true;
    CaiError err{};
    const Status there = status_of(c->comm_unique_id(nullptr, &err), err, "comm_unique_id");
    if (!there.ok()) {
      CAI_LOG_INFO("{}: no collectives across processes: {}", name_, there.message());
      return nullptr;
    }
    process_collectives_ = std::make_unique<PluginProcessCollectives>(*c, *this);
  }
  return process_collectives_.get();
}

#undef CAI_HAS_FIELD

// ---- PluginBackend -------------------------------------------------------------------------------------------------

Status check_plugin_entry(const CaiBackendEntry* entry, const std::string& path) {
  if (!entry) return invalid_argument("plugin {}: {} returned no entry", path, CAI_BACKEND_ENTRY_SYMBOL);
  if (entry->abi_version != CAI_BACKEND_ABI_VERSION)
    return unsupported("plugin {} was built for backend ABI v{}, this engine needs v{}", path, entry->abi_version,
                       CAI_BACKEND_ABI_VERSION);
  // v4.0 and v4.1 entries end before runtime_versions.
  constexpr size_t kMinEntrySize = offsetof(CaiBackendEntry, runtime_versions);
  if (entry->struct_size < kMinEntrySize)
    return unsupported("plugin {}: entry is {} bytes, ABI v{} needs at least {}", path, entry->struct_size,
                       CAI_BACKEND_ABI_VERSION, kMinEntrySize);
  if (!entry->name || !*entry->name || !entry->create)
    return invalid_argument("plugin {}: entry lacks a name or a create function", path);
  return {};
}

Result<std::unique_ptr<PluginBackend>> PluginBackend::create(const CaiBackendEntry& given, const std::string& path) {
  const CaiBackendEntry entry = read_prefix(given, given.struct_size);
  const CaiDevice* const* c_devices = nullptr;
  int32_t n_devices = 0;
  CaiError err{};
  const int code = entry.create(&c_devices, &n_devices, &err);
  std::unique_ptr<PluginBackend> b(new PluginBackend());
  b->name_ = entry.name;
  if (code != CAI_OK) {
    const std::string why = message_of(err);
    return Status(status_code_of(code), fmt::format("plugin {} ('{}') failed to start: {}", path, b->name_,
                                                    why.empty() ? "no reason given" : why));
  }
  b->destroy_ = entry.destroy;  // from here on the destructor releases what create() opened
  b->runtime_ = "plugin " + path;
  if (const char* v = entry.runtime_versions ? entry.runtime_versions() : nullptr; v && *v)
    b->runtime_ += fmt::format(" ({})", v);
  if (!c_devices || n_devices <= 0) return unavailable("plugin {} ('{}') has no devices", path, b->name_);
  for (int32_t i = 0; i < n_devices; ++i) {
    if (!c_devices[i]) return invalid_argument("plugin {} ('{}'): device {} is null", path, b->name_, i);
    CAI_ASSIGN_OR_RETURN(auto device, PluginDevice::create(*c_devices[i], path));
    device->set_collectives(entry.collectives);
    b->devices_.push_back(std::move(device));
  }
  return b;
}

PluginBackend::~PluginBackend() {
  int64_t n_live = 0;
  for (const auto& d : devices_) n_live += d->n_live_objects();
  if (!destroy_) return;
  if (n_live > 0) {
    CAI_LOG_DEBUG("backend '{}': {} buffers/events still alive, plugin left open", name_, n_live);
    return;
  }
  destroy_();
}

std::vector<Device*> PluginBackend::devices() {
  std::vector<Device*> out;
  for (const auto& d : devices_) out.push_back(d.get());
  return out;
}

}  // namespace cai::hal
