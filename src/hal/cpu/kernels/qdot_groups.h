// Interleaved row groups for the integer kernels of --precision fast: a Q8_0 or Q4_0 weight whose row count is a
// multiple of 16 is copied once at load (WeightStore::get_gemm_weight → CpuDevice::pack_gemm_weight) so that each
// 32-column block of 16 consecutive rows lies together, the codes of all 16 rows side by side:
//   kQ8_0_R16 block (544 bytes): f16 d[16], then for each column pair p (16), for each row r (16): codes 2p, 2p+1.
//   kQ4_0_R16 block (288 bytes): f16 d[16], then for each v (4), for each row r (16): the row's Q4_0 qs bytes
//     4v..4v+3 (low nibbles columns 4v..4v+3, high nibbles 16+4v..16+4v+3).
// A SIMD lane then holds one row: one broadcast activation pair (or quad) feeds 16 rows in one instruction, the block's
// int32 sums come out as a vector of 16 rows, and the scales are applied with one vector multiply-add per activation
// row and block, where the row-major kernels need a horizontal sum per row. A group's blocks follow one another, and
// groups follow one another: the tensor keeps its size (row_bytes of the GGUF type per row).
#pragma once

#include <cstdint>

#include "core/dtype.h"

namespace cai {
class ThreadPool;
}

namespace cai::hal::cpu {

// The packed type of a row-major one (kQ8_0 → kQ8_0_R16, kQ4_0 → kQ4_0_R16), or kCount when there is none.
DType packed_dtype(DType row_major);

// Writes `rows` (a multiple of kPackedGroupRows) rows of `in` columns of `row_major` data at src in its packed layout
// to dst (as many bytes, not overlapping src), groups in parallel on `pool` (may be null).
void pack_row_groups(DType row_major, const uint8_t* src, uint8_t* dst, int64_t rows, int64_t in, ThreadPool* pool);

// Row r of a packed weight w of `in` columns as floats: what dequantize_row gave for that row before packing (the
// embed op of a tied embedding reads its rows this way).
void dequantize_packed_row(DType packed, const uint8_t* w, int64_t r, int64_t in, float* out);

}  // namespace cai::hal::cpu
