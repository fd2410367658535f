// Fast decoders of the 32-element types Q4_1, Q5_0, Q5_1 and the K-quants Q2_K, Q3_K
// (docs/design/formats.md#32-element-blocks, docs/design/formats.md#k-quants): v[0..8) = elements i0 .. i0+7 of one
// block, i0 a multiple of 8. The float operations are the format's, in its order, so the values are bit-exact with
// src/core's dequantize_row.
#pragma once

#include "hal/cuda/kernels/block_load.cuh"

namespace cai::gpu {

// Q4_1: d·q + m, low nibbles are elements 0..15, high nibbles 16..31.
__device__ inline void q4_1_chunk(const uint8_t* blk, int i0, float* v) {
  uint32_t lo, hi;
  load8_u16(blk + 4 + i0 % 16, &lo, &hi);
  const float d = load_f16(blk), m = load_f16(blk + 2);
  const int shift = i0 < 16 ? 0 : 4;
  for (int k = 0; k < kChunk; ++k) v[k] = mul_rn(static_cast<float>((byte_of(lo, hi, k) >> shift) & 15), d) + m;
}

// Q5_0 (has_min false: d·(q − 16)) and Q5_1 (d·q + m); bit e of the u32 qh is element e's fifth bit.
__device__ inline void q5_chunk(const uint8_t* blk, bool has_min, int i0, float* v) {
  const int qh_at = has_min ? 4 : 2;
  const uint32_t qh = load_u32_a2(blk + qh_at) >> i0;
  uint32_t lo, hi;
  load8_u16(blk + qh_at + 4 + i0 % 16, &lo, &hi);
  const float d = load_f16(blk), m = has_min ? load_f16(blk + 2) : 0.0f;
  const int shift = i0 < 16 ? 0 : 4;
  for (int k = 0; k < kChunk; ++k) {
    const int q = ((byte_of(lo, hi, k) >> shift) & 15) | static_cast<int>(((qh >> k) & 1u) << 4);
    v[k] = has_min ? mul_rn(static_cast<float>(q), d) + m : static_cast<float>(q - 16) * d;
  }
}

// Byte offset (within the 64 bytes of 2-bit codes) and shift of element n of a Q2_K/Q3_K block: each 128-element half
// uses 32 bytes, four times over at shifts 0, 2, 4, 6, each time as two 16-element sub-blocks.
__device__ __forceinline__ int k23_code_byte(int n) { return 32 * (n / 128) + 16 * ((n % 32) / 16) + n % 16; }
__device__ __forceinline__ int k23_shift(int n) { return 2 * ((n % 128) / 32); }

// Q2_K: scales[n/16] holds the sub-block's scale (low nibble) and min (high nibble).
__device__ inline void q2_k_chunk(const uint8_t* blk, int i0, float* v) {
  uint32_t lo, hi;
  load8_u16(blk + 16 + k23_code_byte(i0), &lo, &hi);
  const int sc = blk[i0 / 16], shift = k23_shift(i0);
  const float dl = load_f16(blk + 80) * static_cast<float>(sc & 15);
  const float ml = load_f16(blk + 82) * static_cast<float>(sc >> 4);
  for (int k = 0; k < kChunk; ++k) v[k] = mul_rn(dl, static_cast<float>((byte_of(lo, hi, k) >> shift) & 3)) - ml;
}

// The 6-bit scale s (0..15) of a Q3_K block from its 12 packed bytes b, before the −32.
__device__ __forceinline__ int q3_k_scale(const uint8_t* b, int s) {
  const int low = s < 8 ? (b[s] & 15) : (b[s - 8] >> 4);
  return low | (((b[8 + s % 4] >> (2 * (s / 4))) & 3) << 4);
}

// Q3_K: a clear hmask bit subtracts 4 from the 2-bit code.
__device__ inline void q3_k_chunk(const uint8_t* blk, int i0, float* v) {
  uint32_t q_lo, q_hi, h_lo, h_hi;
  load8_u16(blk + 32 + k23_code_byte(i0), &q_lo, &q_hi);
  load8_u16(blk + 16 * ((i0 % 32) / 16) + i0 % 16, &h_lo, &h_hi);
  const int shift = k23_shift(i0), hbit = 4 * (i0 / 128) + shift / 2;
  const float dl = load_f16(blk + 108) * static_cast<float>(q3_k_scale(blk + 96, i0 / 16) - 32);
  for (int k = 0; k < kChunk; ++k) {
    const int q = ((byte_of(q_lo, q_hi, k) >> shift) & 3) - (((byte_of(h_lo, h_hi, k) >> hbit) & 1) ? 0 : 4);
    v[k] = dl * static_cast<float>(q);
  }
}

}  // namespace cai::gpu
