// Integer dot-product kernels for --precision fast: a weight row's integer codes times activation rows quantized to
// ActBlockQ8 (core/quant_act.h), int8 × int8 → int32 per block (ActBlockQ16 and int16 products for Q8_0), float
// scales once per block. Per-ISA tables like GemmKernels: scalar (qdot_scalar.cpp), AVX2 (qdot_avx2.cpp), AVX-512
// VNNI (qdot_avx512vnni.cpp), NEON (qdot_neon.cpp), NEON with dotprod (qdot_dotprod.cpp), with dotprod and i8mm
// (qdot_i8mm.cpp), and SVE of 256 or 512 bits (qdot_sve256.cpp, qdot_sve512.cpp).
#pragma once

#include <cstdint>
#include <cstring>

#include "core/dtype.h"
#include "core/quant_act.h"

namespace cai::hal::cpu {

// Activation rows of one dot_wide call.
inline constexpr int kWideDotRows = 16;

// One 32-element block of kWideDotRows activation rows as a dot_wide tile reads them: the code quad of elements
// 4e .. 4e + 3 of row j at q[e][j], then each row's ActBlockQ8::neg8_sum and d. Four rows' quads (or sums, or scales)
// are then 16 consecutive bytes, which the AVX-512 tile broadcasts to its four 128-bit lanes in one load.
struct alignas(64) ActWideBlock {
  int8_t q[kActBlock / 4][kWideDotRows][4];
  int32_t neg8_sum[kWideDotRows];
  float d[kWideDotRows];
};

// Copies activation block a (of row j of a dot_wide call) into its tile block.
inline void set_wide_row(const ActBlockQ8& a, int j, ActWideBlock& out) {
  for (int e = 0; e < kActBlock / 4; ++e) std::memcpy(out.q[e][j], a.q + 4 * e, 4);
  out.neg8_sum[j] = a.neg8_sum;
  out.d[j] = a.d;
}

// One weight row (`in` elements, whole weight blocks) · nx (1..kMaxDotRows) quantized activation rows x + j·ldx
// (ldx counted in ActBlockQ8): out[j] = Σ_blocks (weight scale · act scale · integer dot, offsets folded in through
// ActBlockQ8::sum). Row j's result never depends on nx (batch invariance).
using QDotFn = void (*)(const uint8_t* w, const ActBlockQ8* x, int64_t ldx, int nx, int64_t in, float* out);

// The same against 16-bit activation rows (codes x + j·ldx, block scales xd + j·ldx), int16 × int16 → int32 per block.
using QDot16Fn = void (*)(const uint8_t* w, const ActBlockQ16* x, const float* xd, int64_t ldx, int nx, int64_t in,
                          float* out);

// One packed group (w) · the kWideDotRows activation rows of x, out[j · kPackedGroupRows + r] for row r of the group.
using QDotWideFn = void (*)(const uint8_t* w, const ActWideBlock* x, int64_t in, float* out);

// Quantizes n activations (whole blocks) as quantize_act_row / quantize_act_row_q16 (core/quant_act.h) do; every
// table's function gives the same bytes.
using QuantizeActFn = void (*)(const float* x, int64_t n, ActBlockQ8* out);
using QuantizeAct16Fn = void (*)(const float* x, int64_t n, ActBlockQ16* out, float* d);

// For the packed dtypes (kQ8_0_R16 .. kQ6_K_R16: qdot_groups.h) w is one interleaved group of kPackedGroupRows rows and
// the kernel writes out[j · kPackedGroupRows + r] for row r of the group.
struct QDotKernels {
  QDotFn dot[static_cast<int>(DType::kCount)];  // null: that weight dtype keeps the exact F32 path
  // Set for weight types whose codes are as precise as int8 activations (Q8_0): they take 16-bit activations (Q8_0
  // packed for 8-bit ones, kQ8_0_R16_I8, is in `dot`).
  QDot16Fn dot16[static_cast<int>(DType::kCount)];
  // Packed dtypes where this ISA gains from it: two consecutive groups at once (w, then the next group's bytes),
  // out[j · 2 · kPackedGroupRows + r] for row r of the two; bit for bit what two calls of dot give. Null: dot alone.
  QDotFn dot_pair[static_cast<int>(DType::kCount)];
  // Packed dtypes where this ISA has a tile of kWideDotRows activation rows: exactly that many rows at once (block b
  // of them at x[b]), bit for bit what dot gives each of them (the codes are decoded once for twice the rows). Null:
  // none.
  QDotWideFn dot_wide[static_cast<int>(DType::kCount)];
  QuantizeActFn quantize;
  QuantizeAct16Fn quantize16;
};

const QDotKernels& qdot_kernels_scalar();
// The table for active_cpu_isa(): AVX-512 VNNI where the CPU has it (else the AVX2 table) for avx512, AVX2 for avx2,
// the NEON tables for neon, dotprod and i8mm, the SVE table of the CPU's vector length for sve.
const QDotKernels& active_qdot_kernels();
#if defined(__x86_64__)
const QDotKernels& qdot_kernels_avx2();
const QDotKernels& qdot_kernels_avx512vnni();
#endif
#if defined(__aarch64__)
const QDotKernels& qdot_kernels_neon();
const QDotKernels& qdot_kernels_dotprod();
const QDotKernels& qdot_kernels_i8mm();
const QDotKernels& qdot_kernels_sve256();
const QDotKernels& qdot_kernels_sve512();
// The SVE table of this CPU's vector length (sve_vector_bits(): 256 or 512).
const QDotKernels& qdot_kernels_sve();
#endif

}  // namespace cai::hal::cpu
