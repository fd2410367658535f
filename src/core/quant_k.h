// K-quant (256-element super-block) row codecs used by quant.cpp's dispatch; layouts in
// docs/design/formats.md#k-quants.
#pragma once

#include <cstdint>

namespace cai::quant_k {

// Sub-block s (0..7) 6-bit scale and min of a Q4_K/Q5_K 12-byte scales field. `static` on purpose: the ISA-specific
// GEMM files (compiled with -mavx512f etc.) include it, and internal linkage keeps their copies out of other TUs.
static inline void scale_min(const uint8_t* b, int s, int* sc, int* m) {
  if (s < 4) {
    *sc = b[s] & 63;
    *m = b[s + 4] & 63;
  } else {
    *sc = (b[s + 4] & 15) | ((b[s - 4] >> 6) << 4);
    *m = (b[s + 4] >> 4) | ((b[s] >> 6) << 4);
  }
}

// Q3_K signed scale k (0..15) of the 12-byte scales field: 4 low bits from bytes 0..7 (low nibble for k < 8, high
// nibble of byte k − 8 after), 2 high bits from bytes 8..11, minus 32. `static` for the same reason as scale_min.
static inline int q3_k_scale(const uint8_t* b, int k) {
  int low = k < 8 ? (b[k] & 15) : (b[k - 8] >> 4);
  int high = (b[8 + k % 4] >> (2 * (k / 4))) & 3;
  return (low | (high << 4)) - 32;
}

void dequantize_q2_k(const uint8_t* src, float* dst, int64_t n);
void dequantize_q3_k(const uint8_t* src, float* dst, int64_t n);
void dequantize_q4_k(const uint8_t* src, float* dst, int64_t n);
void dequantize_q5_k(const uint8_t* src, float* dst, int64_t n);
void dequantize_q6_k(const uint8_t* src, float* dst, int64_t n);
void quantize_q4_k(const float* src, uint8_t* dst, int64_t n);
void quantize_q5_k(const float* src, uint8_t* dst, int64_t n);
void quantize_q6_k(const float* src, uint8_t* dst, int64_t n);

}  // namespace cai::quant_k
