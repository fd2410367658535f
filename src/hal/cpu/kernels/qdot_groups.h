// Interleaved row groups for the integer kernels of --precision fast: a Q8_0, Q4_0, Q2_K..Q6_K, IQ4_NL or IQ4_XS weight
// whose row count is a multiple of 16 is copied once at load (WeightStore::get_gemm_weight →
// CpuDevice::pack_gemm_weight) so that each block (32 columns) or super-block (256 columns) of 16 consecutive rows lies
// together, every field of the 16 rows side by side in units of a few bytes (unit u of row r at field base +
// (u · 16 + r) · unit bytes):
//   kQ8_0_R16 block (544 bytes): f16 d[16], then for each column pair p (16), for each row: codes 2p, 2p+1.
//   kQ8_0_R16_I8 block (544 bytes, Q8_0 for 8-bit activations): f16 d[16], then for each quad q (8), for each row:
//     codes 4q..4q+3.
//   kQ4_0_R16 block (288 bytes): f16 d[16], then for each v (4), for each row: the row's Q4_0 qs bytes 4v..4v+3
//     (low nibbles columns 4v..4v+3, high nibbles 16+4v..16+4v+3).
//   kQ4_K_R16 super-block (2304 bytes): f16 d[16], f16 dmin[16], the 12 scale bytes as [byte k][row], then for each
//     quad q (32), for each row: qs bytes 4q..4q+3 (quads 8t..8t+7 hold sub-block 2t in their low nibbles, 2t + 1 in
//     their high nibbles, columns 4·(q % 8) ..).
//   kQ5_K_R16 super-block (2816 bytes): as kQ4_K_R16, with the qh quads (8, [quad][row][4 bytes]; bit s of byte l is
//     the 5th bit of column l of sub-block s) between the scales and the qs quads.
//   kQ6_K_R16 super-block (3360 bytes): f16 d[16], the 16 int8 scales as [scale k][row], then ql in quads (32) and
//     qh in quads (16), each [quad][row][4 bytes].
//   kQ2_K_R16 super-block (1344 bytes): f16 d[16], f16 dmin[16], the 16 scale bytes as [byte k][row], then qs in
//     quads (16, [quad][row][4 bytes]).
//   kQ3_K_R16 super-block (1760 bytes): f16 d[16], the 12 scale bytes as [byte k][row], then hmask in quads (8) and qs
//     in quads (16), each [quad][row][4 bytes].
//   kIQ4_NL_R16 block (288 bytes): as kQ4_0_R16 (the nibbles select levels of the IQ4 table instead of code − 8).
//   kIQ4_XS_R16 super-block (2176 bytes): f16 d[16], scales_h as [row][2 bytes], the 4 scales_l bytes as [byte k][row],
//     then qs in quads (32, [quad][row][4 bytes]; quads 4s..4s+3 are sub-block s, laid out like an IQ4_NL block).
// A SIMD lane then holds one row: one broadcast activation pair (or quad) feeds 16 rows in one instruction, the
// blocks' int32 sums come out as a vector of 16 rows, and the scales are applied with vector multiply-adds per
// activation row and block, where the row-major kernels need a horizontal sum per row. A group's blocks follow one
// another, and groups follow one another: the tensor keeps its size (row_bytes of the GGUF type per row).
#pragma once

#include <cstdint>

#include "core/dtype.h"
#include "hal/op_table.h"

namespace cai {
class ThreadPool;
}

namespace cai::hal::cpu {

// The packed type of a row-major one (kQ8_0 → kQ8_0_R16, or kQ8_0_R16_I8 where its activations may be 8-bit,
// kQ4_0 → kQ4_0_R16, kQ2_K → kQ2_K_R16 .. kQ6_K → kQ6_K_R16, kIQ4_NL → kIQ4_NL_R16, kIQ4_XS → kIQ4_XS_R16), or kCount
// when there is none.
DType packed_dtype(DType row_major, hal::ActivationGrain grain = hal::ActivationGrain::kWeight);
// The row-major type a packed one was made from (kCount for a type that is not packed).
DType row_major_dtype(DType packed);

// Writes `rows` (a multiple of kPackedGroupRows) rows of `in` columns of row_major_dtype(packed) data at src in the
// `packed` layout to dst (as many bytes, not overlapping src), groups in parallel on `pool` (may be null).
void pack_row_groups(DType packed, const uint8_t* src, uint8_t* dst, int64_t rows, int64_t in, ThreadPool* pool);

// Row r of a packed weight w of `in` columns as floats: what dequantize_row gave for that row before packing (the
// embed op of a tied embedding reads its rows this way).
void dequantize_packed_row(DType packed, const uint8_t* w, int64_t r, int64_t in, float* out);

}  // namespace cai::hal::cpu
