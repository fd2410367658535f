// Row-wise dequantize / quantize for every DType (scalar, exact per docs/design/formats.md#quant-block-layouts).
// Kernels live in hal/cpu.
#pragma once

#include <cstdint>

#include "core/dtype.h"
#include "core/status.h"

namespace cai {

// Decode n elements (a multiple of the block size) of type t at src into dst.
void dequantize_row(DType t, const void* src, float* dst, int64_t n);
// Encode n floats into type t (reference quantizers; used by the model generator and tests).
// Returns unsupported for types without a quantizer (FP8 has one: nearest e4m3 code, no scale).
Status quantize_row(DType t, const float* src, void* dst, int64_t n);

}  // namespace cai
