// An f16 field of a GGUF block as f32 through F16C, for the SIMD kernels (core/block_bytes.h's load_f16 converts in
// software, which costs more than a block's products there). Include only from files compiled with -mf16c; internal
// linkage, so copies compiled with different ISA flags never meet in the link.
#pragma once

#include <immintrin.h>

#include <cstdint>

#include "core/block_bytes.h"

namespace cai::hal::cpu {
namespace {

inline float f16_at(const uint8_t* p) { return _cvtsh_ss(block_bytes::load_u16(p)); }

}  // namespace
}  // namespace cai::hal::cpu
