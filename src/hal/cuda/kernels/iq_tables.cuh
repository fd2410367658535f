// The IQ-quant codebooks in device memory, from the same generated literals as the CPU's src/core/quant_grids.h
// (cmake/quant_grids.cmake). Each grid entry packs 8 (or 4) element magnitudes, element 0 in the lowest byte.
// Global rather than constant memory: lookups are data-dependent, and constant memory serialises a warp whose lanes
// read different addresses. Internal linkage because the plugins are compiled without relocatable device code; unused
// in some translation units.
#pragma once

#include "hal/cuda/dialect.h"

namespace cai::gpu {

[[maybe_unused]] static __device__ const uint64_t kIq2xxsGrid[256] = {
#include "quant_grids/iq2xxs_grid.inc"
};
[[maybe_unused]] static __device__ const uint64_t kIq2xsGrid[512] = {
#include "quant_grids/iq2xs_grid.inc"
};
[[maybe_unused]] static __device__ const uint64_t kIq2sGrid[1024] = {
#include "quant_grids/iq2s_grid.inc"
};
[[maybe_unused]] static __device__ const uint32_t kIq3xxsGrid[256] = {
#include "quant_grids/iq3xxs_grid.inc"
};
[[maybe_unused]] static __device__ const uint32_t kIq3sGrid[512] = {
#include "quant_grids/iq3s_grid.inc"
};
// IQ1_S / IQ1_M: bytes are int8 −1, 0 or +1.
[[maybe_unused]] static __device__ const uint64_t kIq1sGrid[2048] = {
#include "quant_grids/iq1s_grid.inc"
};
// IQ4_NL / IQ4_XS: the 16 non-linear levels a 4-bit code selects.
[[maybe_unused]] static __device__ const int8_t kIq4nlValues[16] = {
#include "quant_grids/kvalues_iq4nl.inc"
};

// The IQ2/IQ3 sign byte of a 7-bit sign index: its 7 bits plus an 8th that makes the number of set bits even
// (computed rather than looked up: a parity fold is cheaper than another table read).
__device__ __forceinline__ uint32_t iq_sign_byte(uint32_t index7) {
  uint32_t p = index7 & 127u;
  p ^= p >> 4;
  p ^= p >> 2;
  p ^= p >> 1;
  return (index7 & 127u) | ((p & 1u) << 7);
}

}  // namespace cai::gpu
