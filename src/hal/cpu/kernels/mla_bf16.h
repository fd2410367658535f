// BF16 products for the absorbed MLA op's cache loops under --precision fast (AVX-512 BF16's `vdpbf16ps`, ARM64
// BF16's `bfdot`: two products a 32-bit lane, half the instructions of F32 multiply-adds). The op reads every latent
// row once per (token, chunk of heads) and does 16+ heads' products with it, so on the CPU it runs at the multiply-add
// rate, not the memory rate. Queries, cache rows and attention weights are rounded to BF16 (nearest even); sums and
// outputs stay F32, in one fixed order per output whatever the batch.
#pragma once

#include <cstdint>

namespace cai::hal::cpu {

struct MlaBf16Kernels {
  // out[i] = BF16 of x[i] for i < n, n a multiple of 32.
  void (*to_bf16)(const float* x, int64_t n, uint16_t* out);
  // out[i·ldo + t] = q_i · r_t over n elements (n a multiple of 32) for nq BF16 queries q + i·ldq and nt F32 rows
  // r + t·ldr (rounded to BF16 once, in buf: nt · n values).
  void (*dot_rows)(const uint16_t* q, int64_t ldq, int nq, const float* rows, int64_t ldr, int nt, int64_t n,
                   float* out, int64_t ldo, uint16_t* buf);
  // y[i·ldy + c] += Σ_t a[i·lda + t] · r_t[c] for ny outputs over nt F32 rows and n columns (a multiple of 16): rows
  // and weights rounded to BF16, positions taken in pairs (buf: (nt + 1) · n values).
  void (*axpy_rows)(const float* a, int64_t lda, int ny, const float* rows, int64_t ldr, int nt, int64_t n, float* y,
                    int64_t ldy, uint16_t* buf);
};

// The kernels when this CPU has AVX-512 BF16 and the AVX-512 kernel family is active, or is an ARM64 CPU with BF16
// and a vector family active (CAI_CPU_ISA may lower either); null otherwise, and the op keeps its F32 products.
const MlaBf16Kernels* mla_bf16_kernels();

}  // namespace cai::hal::cpu
