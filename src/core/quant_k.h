// K-quant (256-element super-block) row codecs used by quant.cpp's dispatch; layouts in FORMATS.md §2.3.
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

void dequantize_q4_k(const uint8_t* src, float* dst, int64_t n);
void dequantize_q5_k(const uint8_t* src, float* dst, int64_t n);
void dequantize_q6_k(const uint8_t* src, float* dst, int64_t n);
void quantize_q4_k(const float* src, uint8_t* dst, int64_t n);
void quantize_q5_k(const float* src, uint8_t* dst, int64_t n);
void quantize_q6_k(const float* src, uint8_t* dst, int64_t n);

}  // namespace cai::quant_k
