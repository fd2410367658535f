// Fast decoders of the IQ types (codebook quants, docs/design/formats.md#iq-quants; layouts after ggml's
// ggml-common.h): v[0..8) = elements i0 .. i0+7 of one block, i0 a multiple of 8. In every 256-element IQ1/IQ2/IQ3
// block such a chunk is one grid entry (or two 4-element ones), and sub-block ib = i0/32 holds chunks l = 0..3. The
// float operations are the format's, in its order, so the values are bit-exact with src/core's dequantize_row.
#pragma once

#include "hal/cuda/kernels/block_load.cuh"
#include "hal/cuda/kernels/iq_tables.cuh"

namespace cai::gpu {

inline constexpr float kIq1Delta = 0.125f;  // IQ1 grid values are shifted by ±1/8 (sign from the block)

// v[k] = ±(scale · byte k of grid), negative where bit k of signs is set.
__device__ __forceinline__ void signed_grid8(uint64_t grid, uint32_t signs, float scale, float* v) {
  for (int k = 0; k < kChunk; ++k) {
    const float m = scale * static_cast<float>((grid >> (8 * k)) & 0xFFu);
    v[k] = ((signs >> k) & 1u) ? -m : m;
  }
}

// v[k] = scale · (int8 byte k of grid + delta).
__device__ __forceinline__ void iq1_grid8(uint64_t grid, float scale, float delta, float* v) {
  for (int k = 0; k < kChunk; ++k)
    v[k] = scale * (static_cast<float>(static_cast<int8_t>((grid >> (8 * k)) & 0xFFu)) + delta);
}

// IQ2_XXS (66 bytes: d, then per sub-block 4 grid-index bytes and a u32 of four 7-bit sign indices + 4-bit scale).
__device__ inline void iq2_xxs_chunk(const uint8_t* blk, int i0, float* v) {
  const int ib = i0 / 32, l = (i0 % 32) / 8;
  const uint8_t* sub = blk + 2 + 8 * ib;
  const uint32_t aux = load_u32_a2(sub + 4);
  const float db = load_f16(blk) * (0.5f + static_cast<float>(aux >> 28)) * 0.25f;
  signed_grid8(kIq2xxsGrid[sub[l]], iq_sign_byte(aux >> (7 * l)), db, v);
}

// IQ2_XS (74 bytes: d, u16 codes = 9-bit grid index + 7-bit sign index at 2, a 4-bit scale per 16 elements at 66).
__device__ inline void iq2_xs_chunk(const uint8_t* blk, int i0, float* v) {
  const int ib = i0 / 32, l = (i0 % 32) / 8;
  const uint32_t code = load_u16(blk + 2 + 2 * (4 * ib + l));
  const int s = (blk[66 + ib] >> (4 * (l / 2))) & 15;
  const float db = load_f16(blk) * (0.5f + static_cast<float>(s)) * 0.25f;
  signed_grid8(kIq2xsGrid[code & 511u], iq_sign_byte(code >> 9), db, v);
}

// IQ2_S (82 bytes: d, grid-index low bytes at 2, sign bytes at 34, index high bits at 66, 4-bit scales at 74).
__device__ inline void iq2_s_chunk(const uint8_t* blk, int i0, float* v) {
  const int ib = i0 / 32, l = (i0 % 32) / 8;
  const int idx = blk[2 + 4 * ib + l] | (((blk[66 + ib] >> (2 * l)) & 3) << 8);
  const int s = (blk[74 + ib] >> (4 * (l / 2))) & 15;
  const float db = load_f16(blk) * (0.5f + static_cast<float>(s)) * 0.25f;
  signed_grid8(kIq2sGrid[idx], blk[34 + 4 * ib + l], db, v);
}

// IQ3_XXS (98 bytes: d, 64 grid-index bytes at 2, per sub-block a u32 of sign indices + 4-bit scale at 66).
__device__ inline void iq3_xxs_chunk(const uint8_t* blk, int i0, float* v) {
  const int ib = i0 / 32, l = (i0 % 32) / 8;
  const uint8_t* idx = blk + 2 + 8 * ib + 2 * l;
  const uint32_t aux = load_u32_a2(blk + 66 + 4 * ib);
  const float db = load_f16(blk) * (0.5f + static_cast<float>(aux >> 28)) * 0.5f;
  const uint64_t grid = kIq3xxsGrid[idx[0]] | (static_cast<uint64_t>(kIq3xxsGrid[idx[1]]) << 32);
  signed_grid8(grid, iq_sign_byte(aux >> (7 * l)), db, v);
}

// IQ3_S (110 bytes: d, grid-index low bytes at 2, index high bits at 66, sign bytes at 74, 4-bit scales at 106).
__device__ inline void iq3_s_chunk(const uint8_t* blk, int i0, float* v) {
  const int ib = i0 / 32, l = (i0 % 32) / 8;
  const uint8_t* idx = blk + 2 + 8 * ib + 2 * l;
  const int qh = blk[66 + ib];
  const int i1 = idx[0] | (((qh >> (2 * l)) & 1) << 8), i2 = idx[1] | (((qh >> (2 * l + 1)) & 1) << 8);
  const int s = (blk[106 + ib / 2] >> (4 * (ib % 2))) & 15;
  const float db = load_f16(blk) * static_cast<float>(1 + 2 * s);
  signed_grid8(kIq3sGrid[i1] | (static_cast<uint64_t>(kIq3sGrid[i2]) << 32), blk[74 + 4 * ib + l], db, v);
}

// IQ1_S (50 bytes: d, grid-index low bytes at 2, per sub-block a u16 at 34: 3 index bits per chunk, 3-bit scale at
// bit 12, delta sign at bit 15).
__device__ inline void iq1_s_chunk(const uint8_t* blk, int i0, float* v) {
  const int ib = i0 / 32, l = (i0 % 32) / 8;
  const uint32_t qh = load_u16(blk + 34 + 2 * ib);
  const float dl = load_f16(blk) * static_cast<float>(2 * static_cast<int>((qh >> 12) & 7u) + 1);
  const float delta = (qh & 0x8000u) ? -kIq1Delta : kIq1Delta;
  iq1_grid8(kIq1sGrid[blk[2 + 4 * ib + l] | (((qh >> (3 * l)) & 7u) << 8)], dl, delta, v);
}

// IQ1_M (56 bytes: grid-index low bytes at 0, a nibble per chunk at 32 (3 index bits + delta sign), four u16 of 3-bit
// scales at 48 whose top nibbles together are the f16 super-block scale).
__device__ inline void iq1_m_chunk(const uint8_t* blk, int i0, float* v) {
  const int ib = i0 / 32, l = (i0 % 32) / 8;
  const uint32_t s0 = load_u16(blk + 48), s1 = load_u16(blk + 50), s2 = load_u16(blk + 52), s3 = load_u16(blk + 54);
  const float d = f16_to_f32(static_cast<uint16_t>((s0 >> 12) | ((s1 >> 8) & 0xF0u) | ((s2 >> 4) & 0xF00u) |
                                                   (s3 & 0xF000u)));
  const uint32_t sc = load_u16(blk + 48 + 2 * (ib / 2));
  const float dl = d * static_cast<float>(2 * static_cast<int>((sc >> (6 * (ib % 2) + 3 * (l / 2))) & 7u) + 1);
  const int qh = blk[32 + 2 * ib + l / 2] >> (4 * (l % 2));
  const float delta = (qh & 8) ? -kIq1Delta : kIq1Delta;
  iq1_grid8(kIq1sGrid[blk[4 * ib + l] | ((qh & 7) << 8)], dl, delta, v);
}

// 8 elements from the 16 nibble bytes qs of a 32-element IQ4 group (j0 = i0 mod 32): scale · level.
__device__ __forceinline__ void iq4_nibbles8(const uint8_t* qs, int j0, float scale, float* v) {
  uint32_t lo, hi;
  load8_u16(qs + j0 % 16, &lo, &hi);
  const int shift = j0 < 16 ? 0 : 4;
  for (int k = 0; k < kChunk; ++k)
    v[k] = scale * static_cast<float>(kIq4nlValues[(byte_of(lo, hi, k) >> shift) & 15]);
}

// IQ4_NL (18 bytes: d, 16 nibble bytes).
__device__ inline void iq4_nl_chunk(const uint8_t* blk, int i0, float* v) {
  iq4_nibbles8(blk + 2, i0, load_f16(blk), v);
}

// IQ4_XS (136 bytes: d, u16 of 2-bit scale highs at 2, 4-bit scale lows at 4, 8 nibble groups at 8).
__device__ inline void iq4_xs_chunk(const uint8_t* blk, int i0, float* v) {
  const int ib = i0 / 32;
  const int ls = ((blk[4 + ib / 2] >> (4 * (ib % 2))) & 15) | (((load_u16(blk + 2) >> (2 * ib)) & 3) << 4);
  iq4_nibbles8(blk + 8 + 16 * ib, i0 % 32, load_f16(blk) * static_cast<float>(ls - 32), v);
}

}  // namespace cai::gpu
