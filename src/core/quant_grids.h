// The IQ-quant codebooks: GGUF format data (data/quant_grids, see its README), as constexpr arrays for the CPU.
// Each grid entry packs 8 (or 4) element magnitudes, one per byte, element 0 in the lowest byte.
#pragma once

#include <cstdint>

namespace cai::quant_grids {

inline constexpr uint64_t kIq2xxs[256] = {
#include "quant_grids/iq2xxs_grid.inc"
};
inline constexpr uint64_t kIq2xs[512] = {
#include "quant_grids/iq2xs_grid.inc"
};
inline constexpr uint64_t kIq2s[1024] = {
#include "quant_grids/iq2s_grid.inc"
};
inline constexpr uint32_t kIq3xxs[256] = {
#include "quant_grids/iq3xxs_grid.inc"
};
inline constexpr uint32_t kIq3s[512] = {
#include "quant_grids/iq3s_grid.inc"
};
// IQ1_S / IQ1_M: bytes are int8 −1, 0 or +1 (0xFF, 0x00, 0x01).
inline constexpr uint64_t kIq1s[2048] = {
#include "quant_grids/iq1s_grid.inc"
};
// IQ4_NL / IQ4_XS: the 16 non-linear levels a 4-bit code selects.
inline constexpr int8_t kIq4nlValues[16] = {
#include "quant_grids/kvalues_iq4nl.inc"
};

// The IQ2/IQ3 sign byte of a 7-bit sign index: its 7 bits plus an 8th that makes the number of set bits even.
constexpr uint8_t iq_signs(int index7) {
  const int i = index7 & 127;
  return static_cast<uint8_t>(i | ((__builtin_popcount(static_cast<unsigned>(i)) & 1) << 7));
}

// IQ1_S / IQ1_M grid values are offset by ±kIq1Delta (sign from the block's delta bit).
inline constexpr float kIq1Delta = 0.125f;

}  // namespace cai::quant_grids
