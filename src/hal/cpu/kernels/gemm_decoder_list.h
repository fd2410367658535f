// The weight dtypes the vector GEMMs (AVX2, AVX-512, NEON) decode and the decoder type each x86 ISA's file defines for
// it, as X(Decoder, DType enumerator); each file expands the list into its GemmKernels table (NEON ignores the decoder
// name: gemm_neon.cpp has its own decoders, core/quant's for the grid types).
#pragma once

#define CAI_GEMM_DECODERS(X)          \
  X(F32D, kF32)                       \
  X(F16D, kF16)                       \
  X(BF16D, kBF16)                     \
  X(F8D, kF8_E4M3)                    \
  X(Q8_0D, kQ8_0)                     \
  X(Q4_0D, kQ4_0)                     \
  X(QxKD<false>, kQ4_K)               \
  X(QxKD<true>, kQ5_K)                \
  X(Q6KD, kQ6_K)                      \
  X(CodesD<qc::Q41Q51<false>>, kQ4_1) \
  X(CodesD<qc::Q50>, kQ5_0)           \
  X(CodesD<qc::Q41Q51<true>>, kQ5_1)  \
  X(CodesD<qc::Q2K>, kQ2_K)           \
  X(CodesD<qc::Q3K>, kQ3_K)           \
  X(CodesD<qc::IQ4NL>, kIQ4_NL)       \
  X(CodesD<qc::IQ4XS>, kIQ4_XS)       \
  X(CodesD<qc::IQ3XXS>, kIQ3_XXS)     \
  X(CodesD<qc::IQ3S>, kIQ3_S)         \
  X(CodesD<qc::IQ2XXS>, kIQ2_XXS)     \
  X(CodesD<qc::IQ2XS>, kIQ2_XS)       \
  X(CodesD<qc::IQ2S>, kIQ2_S)         \
  X(CodesD<qc::IQ1S>, kIQ1_S)         \
  X(CodesD<qc::IQ1M>, kIQ1_M)
