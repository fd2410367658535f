// IQ-quant row decoders (scalar, bit-exact with GGUF/ggml), called by quant.cpp's dispatch. This header is the
// layout reference for the SIMD and GPU decoders, so every block is spelled out here.
//
// Common terms. All integers are little-endian; `d` is an IEEE binary16 scale. A 256-element super-block is split
// into 8 sub-blocks of 32 elements (index s = 0..7), each into 4 groups of 8 (group g = 4s + l, l = 0..3). The
// codebooks are in core/quant_grids.h (namespace quant_grids): a grid entry holds 8 (IQ2, IQ1) or 4 (IQ3) element
// magnitudes, one per byte, element 0 in the lowest byte. A "sign byte" negates element j of its group of 8 when bit
// j is set. A "7-bit sign index" stands for the sign byte iq_signs(index): the 7 bits plus an 8th bit that makes the
// number of negated elements even. Scales are computed in float32 in the order written below (it matters for
// bit-exactness, e.g. (d·(0.5 + s))·0.25, never d·((0.5 + s)·0.25)); x = dl·grid then the sign flip.
//
// IQ4_NL (32 elements, 18 bytes): 0 d · 2 qs[16]. Like Q4_0 with a table: element j (0..15) is
//   d·kIq4nlValues[qs[j] & 15], element j + 16 is d·kIq4nlValues[qs[j] >> 4].
// IQ4_XS (256, 136): 0 d · 2 scales_h (u16) · 4 scales_l[4] · 8 qs[128]. Sub-block s has the 6-bit scale
//   ls = ((scales_l[s/2] >> 4(s%2)) & 15) | (((scales_h >> 2s) & 3) << 4), dl = d·(ls − 32), and decodes
//   qs[16s .. 16s+15] exactly like an IQ4_NL block with d replaced by dl.
// IQ2_XXS (256, 66): 0 d · 2 eight 8-byte records, one per sub-block s. Record bytes 0..3: kIq2xxs indices of groups
//   l = 0..3. Bytes 4..7 as a u32 w: bits 7l..7l+6 the 7-bit sign index of group l, bits 28..31 the scale ls.
//   dl = (d·(0.5 + ls))·0.25.
// IQ2_XS (256, 74): 0 d · 2 qs[32] (u16, one per group: bits 0..8 a kIq2xs index, bits 9..15 a 7-bit sign index) ·
//   66 scales[8]. Sub-block s: groups l = 0,1 use the low nibble of scales[s], l = 2,3 the high one; dl as IQ2_XXS.
// IQ2_S (256, 82): 0 d · 2 qs[32] (bits 0..7 of each group's 10-bit kIq2s index) · 34 signs[32] (one full sign byte
//   per group) · 66 qh[8] (bits 2l, 2l+1 of qh[s] are index bits 8, 9 of group 4s+l) · 74 scales[8] (as IQ2_XS).
// IQ3_XXS (256, 98): 0 d · 2 qs[64] (kIq3xxs indices, 4 elements each; 8 per sub-block, group l uses 2l and 2l+1) ·
//   66 eight u32 w (one per sub-block: bits 7l..7l+6 the 7-bit sign index of group l, bits 28..31 the scale ls).
//   dl = (d·(0.5 + ls))·0.5.
// IQ3_S (256, 110): 0 d · 2 qs[64] (bits 0..7 of 9-bit kIq3s indices, 4 elements each) · 66 qh[8] (bit k of qh[s]
//   is index bit 8 of qs[8s + k]) · 74 signs[32] (one full sign byte per group) · 106 scales[4] (sub-block s uses the
//   nibble s%2 of scales[s/2], low first). dl = d·(1 + 2·nibble).
// IQ1_S (256, 50): 0 d · 2 qs[32] (bits 0..7 of each group's 11-bit kIq1s index) · 34 qh[8] (u16, one per sub-block
//   s: bits 3l..3l+2 are index bits 8..10 of group 4s+l, bits 12..14 the scale ls, bit 15 the delta sign).
//   Grid bytes are int8 −1/0/+1; dl = d·(2·ls + 1), δ = −kIq1Delta if bit 15 else +kIq1Delta, x = dl·(grid + δ).
// IQ1_M (256, 56, no separate d): 0 qs[32] (bits 0..7 of 11-bit kIq1s indices) · 32 qh[16] (one nibble per group,
//   group 2p in the low nibble of qh[p], 2p+1 in the high one: nibble bits 0..2 are index bits 8..10, bit 3 the delta
//   sign of that group) · 48 four u16 sc[4]. Bits 12..15 of sc[0], sc[1], sc[2], sc[3] are bits 0..3, 4..7, 8..11,
//   12..15 of the binary16 d. Sub-block s has two 3-bit scales in sc[s/2] at bit 6(s%2): bits +0..2 for its first
//   16 elements (groups l = 0,1), +3..5 for its last 16 (l = 2,3); dl = d·(2·scale + 1), x = dl·(grid + δ) as IQ1_S.
#pragma once

#include <cstdint>

namespace cai::quant_iq {

// Decode n elements (a multiple of the block size) into dst.
void dequantize_iq4_nl(const uint8_t* src, float* dst, int64_t n);
void dequantize_iq4_xs(const uint8_t* src, float* dst, int64_t n);
void dequantize_iq2_xxs(const uint8_t* src, float* dst, int64_t n);
void dequantize_iq2_xs(const uint8_t* src, float* dst, int64_t n);
void dequantize_iq2_s(const uint8_t* src, float* dst, int64_t n);
void dequantize_iq3_xxs(const uint8_t* src, float* dst, int64_t n);
void dequantize_iq3_s(const uint8_t* src, float* dst, int64_t n);
void dequantize_iq1_s(const uint8_t* src, float* dst, int64_t n);
void dequantize_iq1_m(const uint8_t* src, float* dst, int64_t n);

}  // namespace cai::quant_iq
