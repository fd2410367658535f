// Portable integer dot-product kernels (the reference the SIMD tables are tested against): Q8_0 (int16 activations) and
// Q4_0 here, the K-quants in qdot_k_scalar.h, packed IQ4_NL / IQ4_XS in qdot_iq4_scalar.h.
#include <cmath>

#include "core/block_bytes.h"
#include "hal/cpu/kernels/qdot_k_scalar.h"
#include "hal/cpu/kernels/qdot_iq4_scalar.h"
#include "hal/cpu/kernels/qdot_kernels.h"

namespace cai::hal::cpu {

namespace {

// Σ over one 32-element Q4_0 block: the integer dot of its codes with the activation block, the block's offset folded
// in (codes are unsigned, value = code − 8; byte i holds element i in its low nibble and element i + 16 in its high).
int q4_0_isum(const uint8_t* blk, const ActBlockQ8& a) {
  const uint8_t* q = blk + 2;
  int s = 0;
  for (int i = 0; i < 16; ++i) s += (q[i] & 0x0F) * a.q[i] + (q[i] >> 4) * a.q[i + 16];
  return s - 8 * (a.sum[0] + a.sum[1]);
}

void q4_0_dot(const uint8_t* w, const ActBlockQ8* x, int64_t ldx, int nx, int64_t in, float* out) {
  constexpr int kBytes = 18;
  for (int j = 0; j < nx; ++j) {
    const ActBlockQ8* xj = x + j * ldx;
    float acc = 0.0f;
    for (int64_t b = 0; b < in / kActBlock; ++b) {
      const uint8_t* blk = w + b * kBytes;
      acc += block_bytes::load_f16(blk) * xj[b].d * static_cast<float>(q4_0_isum(blk, xj[b]));
    }
    out[j] = acc;
  }
}

// Q8_0 against 16-bit activations: one int32 sum per block (|Σ| ≤ 32 · 128 · 32767 < 2³¹).
void q8_0_dot16(const uint8_t* w, const ActBlockQ16* x, const float* xd, int64_t ldx, int nx, int64_t in, float* out) {
  constexpr int kBytes = 34;
  for (int j = 0; j < nx; ++j) {
    const ActBlockQ16* xj = x + j * ldx;
    const float* dj = xd + j * ldx;
    float acc = 0.0f;
    for (int64_t b = 0; b < in / kActBlock; ++b) {
      const uint8_t* blk = w + b * kBytes;
      const int8_t* q = reinterpret_cast<const int8_t*>(blk + 2);
      int s = 0;
      for (int i = 0; i < kActBlock; ++i) s += q[i] * xj[b].q[i];
      acc += block_bytes::load_f16(blk) * dj[b] * static_cast<float>(s);
    }
    out[j] = acc;
  }
}

// Interleaved 16-row groups (qdot_groups.h): out[j · 16 + r] for row r of the group. Per row and block: the exact
// int32 sum, then acc = fma(sum, d_w · d_x, acc), the operations (and so the bits) of the SIMD group kernels.
void q8_0_r16_dot16(const uint8_t* w, const ActBlockQ16* x, const float* xd, int64_t ldx, int nx, int64_t in,
                    float* out) {
  constexpr int kR = kPackedGroupRows, kBlock = kR * 34;
  for (int j = 0; j < nx; ++j) {
    float acc[kR] = {};
    for (int64_t b = 0; b < in / kActBlock; ++b) {
      const uint8_t* blk = w + b * kBlock;
      const ActBlockQ16& a = x[j * ldx + b];
      for (int r = 0; r < kR; ++r) {
        int s = 0;
        for (int p = 0; p < kActBlock / 2; ++p)
          for (int e = 0; e < 2; ++e) s += static_cast<int8_t>(blk[2 * kR + (p * kR + r) * 2 + e]) * a.q[2 * p + e];
        acc[r] = std::fma(static_cast<float>(s), block_bytes::load_f16(blk + 2 * r) * xd[j * ldx + b], acc[r]);
      }
    }
    for (int r = 0; r < kR; ++r) out[j * kR + r] = acc[r];
  }
}

void q4_0_r16_dot(const uint8_t* w, const ActBlockQ8* x, int64_t ldx, int nx, int64_t in, float* out) {
  constexpr int kR = kPackedGroupRows;
  const auto row_step = [](const uint8_t* blk, const ActBlockQ8* a, int r, float& acc) {
    int s = 0;
    for (int v = 0; v < 4; ++v)
      for (int k = 0; k < 4; ++k) {
        const uint8_t q = group_byte(blk, 2 * kR, 4, v, r, k);
        s += (q & 0x0F) * a->q[4 * v + k] + (q >> 4) * a->q[16 + 4 * v + k];
      }
    s -= 8 * (a->sum[0] + a->sum[1]);
    acc = std::fma(static_cast<float>(s), block_bytes::load_f16(blk + 2 * r) * a->d, acc);
  };
  group_dot_rows<kR * 18, 1>(w, x, ldx, nx, in, out, row_step);
}

// Q8_0 packed for 8-bit activations (kQ8_0_R16_I8): codes as quads, per row and block the exact int32 sum of
// code · a.q, then acc = fma(sum, d_w · a.d, acc).
void q8_0_r16_i8_dot(const uint8_t* w, const ActBlockQ8* x, int64_t ldx, int nx, int64_t in, float* out) {
  constexpr int kR = kPackedGroupRows;
  const auto row_step = [](const uint8_t* blk, const ActBlockQ8* a, int r, float& acc) {
    int s = 0;
    for (int v = 0; v < kActBlock / 4; ++v)
      for (int k = 0; k < 4; ++k) s += static_cast<int8_t>(group_byte(blk, 2 * kR, 4, v, r, k)) * a->q[4 * v + k];
    acc = std::fma(static_cast<float>(s), block_bytes::load_f16(blk + 2 * r) * a->d, acc);
  };
  group_dot_rows<kR * 34, 1>(w, x, ldx, nx, in, out, row_step);
}

}  // namespace

const QDotKernels& qdot_kernels_scalar() {
  static const QDotKernels table = [] {
    QDotKernels k{};
    k.dot[static_cast<int>(DType::kQ4_0)] = q4_0_dot;
    k.dot16[static_cast<int>(DType::kQ8_0)] = q8_0_dot16;
    k.dot[static_cast<int>(DType::kQ4_0_R16)] = q4_0_r16_dot;
    k.dot16[static_cast<int>(DType::kQ8_0_R16)] = q8_0_r16_dot16;
    k.dot[static_cast<int>(DType::kQ8_0_R16_I8)] = q8_0_r16_i8_dot;
    register_qdot_k_scalar(k);
    register_qdot_iq4_scalar(k);
    k.quantize = quantize_act_row;
    k.quantize16 = quantize_act_row_q16;
    return k;
  }();
  return table;
}

}  // namespace cai::hal::cpu
