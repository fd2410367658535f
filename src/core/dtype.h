// Element types: plain floats, GGUF quant blocks (bit-compatible with GGUF) and FP8 e4m3.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string_view>

namespace cai {

enum class DType : uint8_t {
  kF32,
  kF16,
  kBF16,
  kQ8_0,     // 32 elems: f16 d, int8 qs[32]
  kQ4_0,     // 32 elems: f16 d, 16 bytes of nibbles
  kQ4_K,     // 256 elems, 144 bytes
  kQ5_K,     // 256 elems, 176 bytes
  kQ6_K,     // 256 elems, 210 bytes
  kF8_E4M3,  // 1 byte; DeepSeek weights carry 128x128 block scales beside them (TensorView::scale)
  kI32,
  kI8,
  kCount,
};

struct DTypeInfo {
  std::string_view name;    // "q4_K", as llama.cpp spells it
  int block_elems;          // elements per block (1 for plain types)
  int block_bytes;          // bytes per block
  int ggml_id;              // ggml type id, -1 when GGUF has none
};

const DTypeInfo& dtype_info(DType t);
inline std::string_view dtype_name(DType t) { return dtype_info(t).name; }
std::optional<DType> dtype_from_ggml(uint32_t ggml_id);
std::optional<DType> dtype_from_name(std::string_view name);  // "q8_0", "f16", ... (case-insensitive)
inline bool is_quantized(DType t) { return dtype_info(t).block_elems > 1; }
// Bytes of one row of n elements; n must be a multiple of the block size.
inline size_t row_bytes(DType t, int64_t n) {
  const DTypeInfo& i = dtype_info(t);
  return static_cast<size_t>(n / i.block_elems) * static_cast<size_t>(i.block_bytes);
}

// Scalar conversions (exact; round-to-nearest-even on the way down).
float f16_to_f32(uint16_t h);
uint16_t f32_to_f16(float f);
inline float bf16_to_f32(uint16_t b) {
  uint32_t u = static_cast<uint32_t>(b) << 16;
  float f;
  __builtin_memcpy(&f, &u, 4);
  return f;
}
uint16_t f32_to_bf16(float f);
float fp8_e4m3_to_f32(uint8_t code);

}  // namespace cai
