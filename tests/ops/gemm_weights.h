// Test weights for the CPU GEMM tests: random rows quantized per dtype (or random valid blocks for dtypes without a
// quantizer), Gaussian activations, the ISAs this CPU runs and a guard that restores the detected one.
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <random>
#include <vector>

#include "core/quant.h"
#include "core/tensor_view.h"
#include "hal/cpu/kernels/cpu_features.h"

namespace cai::hal::cpu {

struct Weights {
  DType dtype;
  int64_t out, in;
  std::vector<uint8_t> bytes;
  std::vector<float> scale;  // FP8 block scales, or empty
  TensorView view() {
    TensorView t = TensorView::make(bytes.data(), dtype, {out, in});
    if (!scale.empty()) t.scale = scale.data();
    return t;
  }
};

inline std::vector<float> gaussian(int64_t n, std::mt19937& rng, float sd = 1.0f) {
  std::normal_distribution<float> dist(0.0f, sd);
  std::vector<float> v(static_cast<size_t>(n));
  for (auto& x : v) x = dist(rng);
  return v;
}

// GGUF types without a quantizer here: their test weights are random blocks (random_blocks).
inline constexpr DType kBlockOnlyTypes[] = {
    DType::kQ4_1,    DType::kQ5_0,  DType::kQ5_1,    DType::kQ2_K,   DType::kQ3_K,  DType::kIQ4_NL, DType::kIQ4_XS,
    DType::kIQ3_XXS, DType::kIQ3_S, DType::kIQ2_XXS, DType::kIQ2_XS, DType::kIQ2_S, DType::kIQ1_S,  DType::kIQ1_M};

inline bool block_only(DType t) {
  return std::find(std::begin(kBlockOnlyTypes), std::end(kBlockOnlyTypes), t) != std::end(kBlockOnlyTypes);
}

// Random bytes are a valid block of every such type once its f16 scales are finite: they are overwritten with small
// ones (IQ1_M's d is spread over the top nibbles of its four scale words).
inline void random_blocks(DType t, uint8_t* p, int64_t n_blocks, std::mt19937& rng) {
  const int bytes = dtype_info(t).block_bytes;
  std::uniform_int_distribution<int> byte(0, 255);
  std::uniform_real_distribution<float> scale(-0.05f, 0.05f);
  auto put_f16 = [&](uint8_t* at) {
    const uint16_t h = f32_to_f16(scale(rng));
    std::memcpy(at, &h, 2);
  };
  for (int64_t b = 0; b < n_blocks; ++b, p += bytes) {
    for (int i = 0; i < bytes; ++i) p[i] = static_cast<uint8_t>(byte(rng));
    switch (t) {
      case DType::kQ4_1:
      case DType::kQ5_1: put_f16(p), put_f16(p + 2); break;
      case DType::kQ2_K: put_f16(p + 80), put_f16(p + 82); break;
      case DType::kQ3_K: put_f16(p + 108); break;
      case DType::kIQ1_M: {
        const uint16_t h = f32_to_f16(scale(rng));
        for (int k = 0; k < 4; ++k)
          p[49 + 2 * k] = static_cast<uint8_t>((p[49 + 2 * k] & 0x0F) | (((h >> (4 * k)) & 15) << 4));
        break;
      }
      default: put_f16(p); break;  // every other type starts with d
    }
  }
}

inline Weights make_weights(DType t, int64_t out, int64_t in, bool scaled, std::mt19937& rng) {
  Weights w{t, out, in, std::vector<uint8_t>(row_bytes(t, in) * static_cast<size_t>(out)), {}};
  if (block_only(t)) {
    random_blocks(t, w.bytes.data(), out * (in / dtype_info(t).block_elems), rng);
    return w;
  }
  auto src = gaussian(out * in, rng, t == DType::kF8_E4M3 ? 100.0f : 1.0f);
  for (int64_t r = 0; r < out; ++r) {
    Status st = quantize_row(t, src.data() + r * in, w.bytes.data() + r * row_bytes(t, in), in);
    EXPECT_TRUE(st.ok()) << st.to_string();
  }
  if (scaled) {
    std::uniform_real_distribution<float> u(0.001f, 0.02f);
    w.scale.resize(static_cast<size_t>(((out + 127) / 128) * ((in + 127) / 128)));
    for (auto& s : w.scale) s = u(rng);
  }
  return w;
}

inline std::vector<CpuIsa> available_isas() {
  std::vector<CpuIsa> v;
  for (CpuIsa isa : cpu_isas_of_this_architecture())
    if (cpu_isa_available(isa)) v.push_back(isa);
  return v;
}

// Restores the detected ISA when a test that forces one ends.
struct IsaGuard {
  ~IsaGuard() { EXPECT_TRUE(set_active_cpu_isa(best_cpu_isa()).ok()); }
};

}  // namespace cai::hal::cpu
