// Portable integer dot-product kernels (the reference the SIMD tables are tested against): Q8_0 and Q4_0 here, the
// K-quants in qdot_k_scalar.h.
#include "core/block_bytes.h"
#include "hal/cpu/kernels/qdot_k_scalar.h"
#include "hal/cpu/kernels/qdot_kernels.h"

namespace cai::hal::cpu {

namespace {

// Σ over one 32-element legacy block: the integer dot of its codes with the activation block, the block's own offset
// folded in (Q4_0 codes are unsigned, value = code − 8).
template <DType T>
int block_isum(const uint8_t* blk, const ActBlockQ8& a) {
  int s = 0;
  if constexpr (T == DType::kQ8_0) {
    const int8_t* q = reinterpret_cast<const int8_t*>(blk + 2);
    for (int i = 0; i < kActBlock; ++i) s += q[i] * a.q[i];
  } else {  // Q4_0: byte i holds element i (low nibble) and element i + 16 (high nibble)
    const uint8_t* q = blk + 2;
    for (int i = 0; i < 16; ++i) s += (q[i] & 0x0F) * a.q[i] + (q[i] >> 4) * a.q[i + 16];
    s -= 8 * (a.sum[0] + a.sum[1]);
  }
  return s;
}

template <DType T>
void legacy_dot(const uint8_t* w, const ActBlockQ8* x, int64_t ldx, int nx, int64_t in, float* out) {
  const int block_bytes = dtype_info(T).block_bytes;
  for (int j = 0; j < nx; ++j) {
    const ActBlockQ8* xj = x + j * ldx;
    float acc = 0.0f;
    for (int64_t b = 0; b < in / kActBlock; ++b) {
      const uint8_t* blk = w + b * block_bytes;
      acc += block_bytes::load_f16(blk) * xj[b].d * static_cast<float>(block_isum<T>(blk, xj[b]));
    }
    out[j] = acc;
  }
}

}  // namespace

const QDotKernels& qdot_kernels_scalar() {
  static const QDotKernels table = [] {
    QDotKernels k{};
    k.dot[static_cast<int>(DType::kQ8_0)] = legacy_dot<DType::kQ8_0>;
    k.dot[static_cast<int>(DType::kQ4_0)] = legacy_dot<DType::kQ4_0>;
    register_qdot_k_scalar(k);
    return k;
  }();
  return table;
}

}  // namespace cai::hal::cpu
