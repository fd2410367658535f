// Buffer ownership and the op-table lookups shared by every Device.
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

}  // namespace cai::hal
