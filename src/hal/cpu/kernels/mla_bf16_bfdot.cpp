// MlaBf16Kernels on ARM64 with the BF16 instructions (mla_bf16.h; ARMv8.6 BF16: Neoverse V1 / N2, Graviton 3), built
// with armv8.2-a+bf16. `bfdot` adds two BF16 products to each 32-bit lane, as `vdpbf16ps` does on x86-64, so the
// tiles are mla_bf16_avx512bf16.cpp's with 4-lane registers, in the same loops (mla_bf16_tiles.h). Dots: tiles of 4
// queries × 4 rows, each dot one chain summed across its lanes at the end, rows rounded to BF16 once for all queries.
// Accumulations: positions in pairs, each pair's two rows interleaved element by element so that one `bfdot` adds both
// positions' products to 4 columns; 4 outputs × 16 columns a pass.
#include "hal/cpu/kernels/mla_bf16.h"

#if defined(__aarch64__)

#include "hal/cpu/kernels/cpu_features.h"

#if defined(__ARM_FEATURE_BF16_VECTOR_ARITHMETIC)

#include <arm_neon.h>
#if defined(__linux__)
#include <asm/hwcap.h>
#include <sys/auxv.h>
#endif

#include "hal/cpu/kernels/mla_bf16_tiles.h"

namespace cai::hal::cpu {

namespace {

// 8 floats as 8 BF16 values, nearest even.
bfloat16x8_t bf16x8(const float* x) { return vcvtq_high_bf16_f32(vcvtq_low_bf16_f32(vld1q_f32(x)), vld1q_f32(x + 4)); }

bfloat16x8_t load_bf16x8(const uint16_t* p) { return vreinterpretq_bf16_u16(vld1q_u16(p)); }

// The BF16 bits of x (nearest even) in the low half of a 32-bit word.
uint32_t bf16_bits(float x) {
  const bfloat16_t b = vcvth_bf16_f32(x);
  uint16_t u;
  __builtin_memcpy(&u, &b, 2);
  return u;
}

// The tiles of MlaBf16Tiles (mla_bf16_tiles.h).
struct BfdotTile {
  static void to_bf16(const float* x, int64_t n, uint16_t* out) {
    for (int64_t i = 0; i < n; i += 8) vst1q_u16(out + i, vreinterpretq_u16_bf16(bf16x8(x + i)));
  }

  template <int QN, int RN>
  static void dot_tile(const uint16_t* q, int64_t ldq, const uint16_t* r, int64_t n, float* out, int64_t ldo) {
    float32x4_t acc[QN][RN];
    for (int i = 0; i < QN; ++i)
      for (int t = 0; t < RN; ++t) acc[i][t] = vdupq_n_f32(0.0f);
    for (int64_t d = 0; d < n; d += 8) {
      bfloat16x8_t rv[RN];
      for (int t = 0; t < RN; ++t) rv[t] = load_bf16x8(r + t * n + d);
      for (int i = 0; i < QN; ++i) {
        const bfloat16x8_t qv = load_bf16x8(q + i * ldq + d);
        for (int t = 0; t < RN; ++t) acc[i][t] = vbfdotq_f32(acc[i][t], qv, rv[t]);
      }
    }
    for (int i = 0; i < QN; ++i)
      for (int t = 0; t < RN; ++t) out[i * ldo + t] = vaddvq_f32(acc[i][t]);
  }

  // 8 columns of positions 2k and 2k + 1 become 16 BF16 values x0 y0 x1 y1 ...
  static void interleave_pairs(const float* rows, int64_t ldr, int nt, int64_t n, uint16_t* buf) {
    for (int k = 0; k < (nt + 1) / 2; ++k) {
      const float* r0 = rows + 2 * k * ldr;
      const bool odd_end = 2 * k + 1 == nt;
      for (int64_t c = 0; c < n; c += 8) {
        const uint16x8_t x0 = vreinterpretq_u16_bf16(bf16x8(r0 + c));
        const uint16x8_t x1 = odd_end ? vdupq_n_u16(0) : vreinterpretq_u16_bf16(bf16x8(r0 + ldr + c));
        vst1q_u16(buf + (k * n + c) * 2, vzip1q_u16(x0, x1));
        vst1q_u16(buf + (k * n + c) * 2 + 8, vzip2q_u16(x0, x1));
      }
    }
  }

  static uint32_t pair_word(float x, float y) { return bf16_bits(x) | bf16_bits(y) << 16; }

  // M outputs' n columns (a multiple of 16), 4 outputs × 16 columns a pass.
  template <int M>
  static void axpy_outputs(const uint32_t* w, int np, const uint16_t* pairs, int64_t n, float* y, int64_t ldy) {
    for (int64_t c0 = 0; c0 < n; c0 += 16) {
      float32x4_t acc[M][4];
      for (int i = 0; i < M; ++i)
        for (int c = 0; c < 4; ++c) acc[i][c] = vld1q_f32(y + i * ldy + c0 + 4 * c);
      for (int k = 0; k < np; ++k) {
        bfloat16x8_t v[4];
        for (int c = 0; c < 4; ++c) v[c] = load_bf16x8(pairs + (k * n + c0 + 4 * c) * 2);
        for (int i = 0; i < M; ++i) {
          const bfloat16x8_t a = vreinterpretq_bf16_u32(vdupq_n_u32(w[i * np + k]));
          for (int c = 0; c < 4; ++c) acc[i][c] = vbfdotq_f32(acc[i][c], a, v[c]);
        }
      }
      for (int i = 0; i < M; ++i)
        for (int c = 0; c < 4; ++c) vst1q_f32(y + i * ldy + c0 + 4 * c, acc[i][c]);
    }
  }
};

bool cpu_has_bf16() {
#if defined(__linux__)
  return (getauxval(AT_HWCAP2) & HWCAP2_BF16) != 0;
#else
  return false;
#endif
}

}  // namespace

const MlaBf16Kernels* mla_bf16_kernels() {
  static const bool has_bf16 = cpu_has_bf16();
  return has_bf16 && active_cpu_isa() != CpuIsa::kScalar ? &MlaBf16Tiles<BfdotTile>::table() : nullptr;
}

}  // namespace cai::hal::cpu

#else

namespace cai::hal::cpu {

const MlaBf16Kernels* mla_bf16_kernels() { return nullptr; }

}  // namespace cai::hal::cpu

#endif
#endif
