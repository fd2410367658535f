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
    case OpId::kEmbed: return "embed";
    case OpId::kRmsNorm: return "rms_norm";
    case OpId::kRope: return "rope";
    case OpId::kDenseGemm: return "dense_gemm";
    case OpId::kAdd: return "add";
    case OpId::kSwiglu: return "swiglu";
    case OpId::kSoftmax: return "softmax";
    case OpId::kCopyCols: return "copy_cols";
    case OpId::kKvWrite: return "kv_write";
    case OpId::kAttentionGqa: return "attention_gqa";
    case OpId::kMoeGate: return "moe_gate";
    case OpId::kSparseMoe: return "sparse_moe";
    case OpId::kAttentionMla: return "attention_mla";
    case OpId::kCount: break;
  }
  return "?";
}

bool Device::supports(OpId op) const {
  const OpTable& t = ops();
  switch (op) {
    case OpId::kEmbed: return t.embed != nullptr;
    case OpId::kRmsNorm: return t.rms_norm != nullptr;
    case OpId::kRope: return t.rope != nullptr;
    case OpId::kDenseGemm: return t.dense_gemm != nullptr;
    case OpId::kAdd: return t.add != nullptr;
    case OpId::kSwiglu: return t.swiglu != nullptr;
    case OpId::kSoftmax: return t.softmax != nullptr;
    case OpId::kCopyCols: return t.copy_cols != nullptr;
    case OpId::kKvWrite: return t.kv_write != nullptr;
    case OpId::kAttentionGqa: return t.attention_gqa != nullptr;
    case OpId::kMoeGate: return t.moe_gate != nullptr;
    case OpId::kSparseMoe: return t.sparse_moe != nullptr;
    case OpId::kAttentionMla: return t.attention_mla != nullptr;
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
