// Declarations of the CPU backend's kernels (one function per OpTable entry) and their shared helpers.
#pragma once

#include <functional>
#include <initializer_list>

#include "hal/op_table.h"

namespace cai::hal::cpu {

// Run fn over [0, n) on the context's pool (or inline without one).
void parallel_rows(const OpContext& ctx, int64_t n, int64_t grain, const std::function<void(int64_t, int64_t)>& fn);
// x = softmax(x) over n values (the active ISA's GemmKernels::softmax_row).
void softmax_row(float* x, int64_t n);
// The KV dtype check of a kernel (check_kv_cache_dtype) plus: each vector it reads from a row (GQA head, MLA c_kv or
// k_rope) is whole blocks of a block dtype (Q8_0).
Status check_kv_parts(const char* op, DType t, std::initializer_list<int> widths);
// nt consecutive rows of one paged KV cache block (F32, F16, BF16 or Q8_0): row t's vector starts at element
// elem0 + t·stride (for Q8_0 elem0, stride and widths are whole blocks).
struct KvRows {
  const TensorView* cache;
  int64_t elem0, stride;
  int nt;
};
// out[j·ldo + t] = x_j · row t for nx query vectors x + j·ldx, and y + j·ldy += Σ_t a[j·lda + t] · row t (rows in
// order) for ny outputs; n elements of each row. F16 / BF16 rows are decoded once into buf (nt · n floats) for all
// queries. Each output gets the same bits however many rows and queries a call takes.
// The rows' n elements as floats, row t at dst + t·ld (F16 / BF16 / Q8_0 decoded).
void kv_read_rows(const KvRows& r, int64_t n, float* dst, int64_t ld);
// The block's first n elements of each row as floats, row t at the result + t·(*ld): an F32 cache in place, others
// decoded into buf (nt · n floats).
const float* kv_f32_rows(const KvRows& r, int64_t n, float* buf, int64_t* ld);
void kv_dot_block(const KvRows& r, int64_t n, const float* x, int64_t ldx, int nx, float* out, int64_t ldo, float* buf);
void kv_axpy_block(const KvRows& r, int64_t n, const float* a, int64_t lda, int ny, float* y, int64_t ldy, float* buf);

// Rows r .. r + nt − 1 of the weight w (any dtype, packed row groups included) as floats, w.cols() apart: in place
// for F32, else decoded into buf (nt · cols floats) through the active ISA's decoder where it has one (the generic
// decode costs more than the products that use the rows).
const float* weight_rows_f32(const TensorView& w, int64_t r, int nt, float* buf);

// The kernel of every op (CAI_HAL_OPS; dense_gemm's is in gemm.cpp).
#define CAI_OP_KERNEL(op, Id, params) Status op params;
CAI_HAL_OPS(CAI_OP_KERNEL)
#undef CAI_OP_KERNEL

}  // namespace cai::hal::cpu
