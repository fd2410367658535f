// Header-only C++ helpers for writing a CAI backend plugin against cai/backend_abi.h (C++17, no engine headers).
//
// A plugin derives its device class from cai::plugin::Device, fills a CaiOps (empty_ops() + its own functions), and
// exports one CaiBackendEntry under CAI_BACKEND_ENTRY_SYMBOL:
//
//   CAI_PLUGIN_EXPORT const CaiBackendEntry* cai_backend_entry_v4(void) { return &my_entry; }
//
// Everything that crosses the boundary is a CAI_* code plus a message in CaiError; guarded() turns C++ exceptions
// into codes so none escapes into the engine.
#ifndef CAI_BACKEND_PLUGIN_HPP
#define CAI_BACKEND_PLUGIN_HPP

#include <cstdarg>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <exception>
#include <new>

#include "cai/backend_abi.h"

#define CAI_PLUGIN_EXPORT extern "C" __attribute__((visibility("default")))

namespace cai::plugin {

// Writes a printf-style message into err (when not null) and returns code.
inline int vfail(CaiError* err, int code, const char* fmt, va_list args) {
  if (err) std::vsnprintf(err->message, sizeof err->message, fmt, args);
  return code;
}

inline int fail(CaiError* err, int code, const char* fmt, ...) __attribute__((format(printf, 3, 4)));
inline int fail(CaiError* err, int code, const char* fmt, ...) {
  va_list args;
  va_start(args, fmt);
  vfail(err, code, fmt, args);
  va_end(args);
  return code;
}

// Runs body() (which returns a CAI_* code) so that no exception crosses the C boundary; `what` names the call.
template <class Body>
int guarded(CaiError* err, const char* what, Body&& body) noexcept {
  try {
    return body();
  } catch (const std::bad_alloc&) {
    return fail(err, CAI_ERR_OUT_OF_MEMORY, "%s: out of host memory", what);
  } catch (const std::exception& e) {
    return fail(err, CAI_ERR_INTERNAL, "%s: %s", what, e.what());
  } catch (...) {
    return fail(err, CAI_ERR_INTERNAL, "%s: unknown exception", what);
  }
}

// Elements per block and bytes per block of a CAI_DTYPE_* (0, 0 for an unknown value).
struct BlockLayout {
  int64_t elems;
  int64_t bytes;
};
inline BlockLayout block_layout(int32_t dtype) {
  switch (dtype) {
    case CAI_DTYPE_F32: case CAI_DTYPE_I32: return {1, 4};
    case CAI_DTYPE_F16: case CAI_DTYPE_BF16: return {1, 2};
    case CAI_DTYPE_F8_E4M3: case CAI_DTYPE_I8: return {1, 1};
    case CAI_DTYPE_Q8_0: return {32, 34};
    case CAI_DTYPE_Q4_0: return {32, 18};
    case CAI_DTYPE_Q4_K: return {256, 144};
    case CAI_DTYPE_Q5_K: return {256, 176};
    case CAI_DTYPE_Q6_K: return {256, 210};
    case CAI_DTYPE_Q4_1: return {32, 20};
    case CAI_DTYPE_Q5_0: return {32, 22};
    case CAI_DTYPE_Q5_1: return {32, 24};
    case CAI_DTYPE_IQ4_NL: return {32, 18};
    case CAI_DTYPE_Q2_K: return {256, 84};
    case CAI_DTYPE_Q3_K: case CAI_DTYPE_IQ3_S: return {256, 110};
    case CAI_DTYPE_IQ4_XS: return {256, 136};
    case CAI_DTYPE_IQ3_XXS: return {256, 98};
    case CAI_DTYPE_IQ2_XXS: return {256, 66};
    case CAI_DTYPE_IQ2_XS: return {256, 74};
    case CAI_DTYPE_IQ2_S: return {256, 82};
    case CAI_DTYPE_IQ1_S: return {256, 50};
    case CAI_DTYPE_IQ1_M: return {256, 56};
    default: return {0, 0};
  }
}

// Elements of a tensor (1 for n_dims == 0; 0 when n_dims is out of range or a dim is negative).
inline int64_t n_elements(const CaiTensor& t) {
  if (t.n_dims < 0 || t.n_dims > 4) return 0;
  int64_t n = 1;
  for (int i = 0; i < t.n_dims; ++i) {
    if (t.shape[i] < 0) return 0;
    n *= t.shape[i];
  }
  return n;
}

// Bytes of a tensor's data: rows hold whole blocks (0 for an unknown dtype).
inline uint64_t tensor_bytes(const CaiTensor& t) {
  const BlockLayout b = block_layout(t.dtype);
  if (b.elems == 0) return 0;
  return static_cast<uint64_t>(n_elements(t) / b.elems * b.bytes);
}

// Bytes of an FP8 weight's block scales: F32 [.., ceil(rows/128), ceil(cols/128)] (0 when the tensor has none).
inline uint64_t scale_bytes(const CaiTensor& t) {
  if (!t.scale || t.n_dims < 2 || t.n_dims > 4) return 0;
  int64_t n = 1;
  for (int i = 0; i < t.n_dims - 2; ++i) n *= t.shape[i];
  n *= (t.shape[t.n_dims - 2] + 127) / 128;
  n *= (t.shape[t.n_dims - 1] + 127) / 128;
  return static_cast<uint64_t>(n) * sizeof(float);
}

// A CaiOps with every op unsupported and struct_size set, ready to fill.
inline CaiOps empty_ops() {
  CaiOps ops;
  std::memset(&ops, 0, sizeof ops);
  ops.struct_size = sizeof ops;
  return ops;
}

// Base of a plugin device. Implement the pure virtuals; the event defaults suit a device whose work is finished when
// each call returns (host plugins). c_device() gives the C table whose functions call back into this object.
class Device {
 public:
  virtual ~Device() = default;

  virtual int memory_info(uint64_t* total_bytes, uint64_t* free_bytes, CaiError* err) = 0;
  virtual int telemetry(CaiTelemetry* out, CaiError*) {
    out->valid = 0;
    return CAI_OK;
  }
  virtual int allocate(size_t n_bytes, bool host_pinned, void** out, CaiError* err) = 0;
  // The four calls without an error channel (free, event_done, event_destroy, set_batch_invariant) are noexcept.
  virtual void free(void* ptr, bool host_pinned) noexcept = 0;
  virtual int copy_to_device(void* dst, const void* src, size_t n, CaiError* err) = 0;
  virtual int copy_to_host(void* dst, const void* src, size_t n, CaiError* err) = 0;
  virtual int synchronize(CaiError* err) = 0;
  virtual int event_record(CaiEventHandle* out, CaiError*) {
    *out = nullptr;
    return CAI_OK;
  }
  virtual int event_wait(CaiEventHandle, CaiError*) { return CAI_OK; }
  virtual bool event_done(CaiEventHandle) noexcept { return true; }
  virtual void event_destroy(CaiEventHandle) noexcept {}
  virtual void set_batch_invariant(bool) noexcept {}

  // The device behind a handle a CaiDevice/CaiOps function receives.
  template <class D = Device>
  static D& from(CaiDeviceHandle handle) {
    return *static_cast<D*>(static_cast<Device*>(handle));
  }

  // The C view of this device. The strings and ops must live as long as this object.
  CaiDevice c_device(const char* name, const char* description, bool host_visible, const CaiOps* ops) {
    CaiDevice d;
    std::memset(&d, 0, sizeof d);
    d.struct_size = sizeof d;
    d.handle = static_cast<Device*>(this);
    d.name = name;
    d.description = description;
    d.host_visible = host_visible ? 1 : 0;
    d.ops = ops;
    fill_memory_calls(d);
    fill_stream_calls(d);
    return d;
  }

 private:
  static void fill_memory_calls(CaiDevice& d) {
    d.memory_info = [](CaiDeviceHandle h, uint64_t* total, uint64_t* free_bytes, CaiError* err) {
      return guarded(err, "memory_info", [&] { return from(h).memory_info(total, free_bytes, err); });
    };
    d.telemetry = [](CaiDeviceHandle h, CaiTelemetry* out, CaiError* err) {
      return guarded(err, "telemetry", [&] { return from(h).telemetry(out, err); });
    };
    d.allocate = [](CaiDeviceHandle h, size_t n, int32_t pinned, void** out, CaiError* err) {
      return guarded(err, "allocate", [&] { return from(h).allocate(n, pinned != 0, out, err); });
    };
    d.free = [](CaiDeviceHandle h, void* p, int32_t pinned) { from(h).free(p, pinned != 0); };
    d.set_batch_invariant = [](CaiDeviceHandle h, int32_t on) { from(h).set_batch_invariant(on != 0); };
  }

  static void fill_stream_calls(CaiDevice& d) {
    d.copy_to_device = [](CaiDeviceHandle h, void* dst, const void* src, size_t n, CaiError* err) {
      return guarded(err, "copy_to_device", [&] { return from(h).copy_to_device(dst, src, n, err); });
    };
    d.copy_to_host = [](CaiDeviceHandle h, void* dst, const void* src, size_t n, CaiError* err) {
      return guarded(err, "copy_to_host", [&] { return from(h).copy_to_host(dst, src, n, err); });
    };
    d.synchronize = [](CaiDeviceHandle h, CaiError* err) {
      return guarded(err, "synchronize", [&] { return from(h).synchronize(err); });
    };
    d.event_record = [](CaiDeviceHandle h, CaiEventHandle* out, CaiError* err) {
      return guarded(err, "event_record", [&] { return from(h).event_record(out, err); });
    };
    d.event_wait = [](CaiDeviceHandle h, CaiEventHandle e, CaiError* err) {
      return guarded(err, "event_wait", [&] { return from(h).event_wait(e, err); });
    };
    d.event_done = [](CaiDeviceHandle h, CaiEventHandle e) { return from(h).event_done(e) ? 1 : 0; };
    d.event_destroy = [](CaiDeviceHandle h, CaiEventHandle e) { from(h).event_destroy(e); };
  }
};

}  // namespace cai::plugin

#endif  // CAI_BACKEND_PLUGIN_HPP
