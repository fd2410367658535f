// Buffer ownership, the op-table lookups and the KV-cache dtype check shared by every Device.
#include "hal/hal.h"

namespace cai::hal {

Buffer& Buffer::operator=(Buffer&& o) noexcept {
  if (this != &o) {
    reset();
    device_ = o.device_;
    ptr_ = o.ptr_;
    size_ = o.size_;
    kind_ = o.kind_;
    o.device_ = nullptr;
    o.ptr_ = nullptr;
    o.size_ = 0;
  }
  return *this;
}

void Buffer::reset() {
  if (ptr_ && device_) device_->free(ptr_, kind_);
  ptr_ = nullptr;
  size_ = 0;
}

const char* op_name(OpId op) {
  switch (op) {
#define CAI_OP_NAME(op, Id, params) \
  case OpId::k##Id: return #op;
    CAI_HAL_OPS(CAI_OP_NAME)
#undef CAI_OP_NAME
    case OpId::kCount: break;
  }
  return "?";
}

bool Device::supports(OpId op) const {
  const OpTable& t = ops();
  switch (op) {
#define CAI_OP_PRESENT(op, Id, params) \
  case OpId::k##Id: return t.op != nullptr;
    CAI_HAL_OPS(CAI_OP_PRESENT)
#undef CAI_OP_PRESENT
    case OpId::kCount: break;
  }
  return false;
}

std::string device_names(const std::vector<Device*>& devices, std::string_view separator) {
  std::string names;
  for (const Device* d : devices) {
    if (!names.empty()) names += separator;
    names += d->name();
  }
  return names;
}

Status check_kv_cache_dtype(const Device& device, const char* what, DType t) {
  if (device.supports_kv_dtype(t)) return {};
  std::string taken;
  for (DType k : {DType::kF32, DType::kF16, DType::kBF16, DType::kQ8_0})
    if (device.supports_kv_dtype(k)) taken += (taken.empty() ? "" : ", ") + std::string(dtype_name(k));
  return unsupported("{}: a KV cache of {} is not supported on {} (it takes {})", what, dtype_name(t), device.name(),
                     taken);
}

}  // namespace cai::hal
