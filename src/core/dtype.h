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
  // GGUF types past the first eight (docs/design/formats.md#gguf-type-ids; IQ layouts in quant_iq.h). Appended, so the
  // values of the types above (and of the plugin ABI's CAI_DTYPE_*) stay put.
  kQ4_1,     // 32 elems, 20 bytes: f16 d, f16 m, 16 bytes of nibbles
  kQ5_0,     // 32 elems, 22 bytes: f16 d, u32 qh, 16 bytes of nibbles
  kQ5_1,     // 32 elems, 24 bytes: f16 d, f16 m, u32 qh, 16 bytes of nibbles
  kQ2_K,     // 256 elems, 84 bytes
  kQ3_K,     // 256 elems, 110 bytes
  kIQ4_NL,   // 32 elems, 18 bytes: f16 d, 16 bytes of nibbles into the non-linear table
  kIQ4_XS,   // 256 elems, 136 bytes
  kIQ3_XXS,  // 256 elems, 98 bytes
  kIQ3_S,    // 256 elems, 110 bytes
  kIQ2_XXS,  // 256 elems, 66 bytes
  kIQ2_XS,   // 256 elems, 74 bytes
  kIQ2_S,    // 256 elems, 82 bytes
  kIQ1_S,    // 256 elems, 50 bytes
  kIQ1_M,    // 256 elems, 56 bytes (the f16 super-block scale is spread over the scales' top nibbles)
  // Host-side layouts of the CPU's --precision fast path (hal/cpu/kernels/qdot_groups.h), never in a file nor passed
  // to a plugin: 16 weight rows interleaved per 32-column block, the same bytes per row as the GGUF type.
  kQ8_0_R16,     // per group block: f16 d[16], then int8 codes as [col pair 16][row 16][2]
  kQ4_0_R16,     // per group block: f16 d[16], then nibbles as [4][row 16][4 bytes of that row's Q4_0 qs]
  kQ4_K_R16,     // per group super-block: f16 d[16], dmin[16], scale bytes [12][row 16], qs as [32][row 16][4 bytes]
  kQ6_K_R16,     // per group super-block: f16 d[16], scales [16][row 16], ql as [32][row 16][4], qh as [16][row 16][4]
  kQ5_K_R16,     // as kQ4_K_R16 with qh as [8][row 16][4 bytes] between the scales and qs
  kQ2_K_R16,     // per group super-block: f16 d[16], dmin[16], scale bytes [16][row 16], qs as [16][row 16][4 bytes]
  kQ3_K_R16,     // per group super-block: f16 d[16], scale bytes [12][row 16], hmask [8][row 16][4], qs [16][row 16][4]
  kIQ4_NL_R16,   // as kQ4_0_R16: f16 d[16], then nibbles as [4][row 16][4 bytes of that row's IQ4_NL qs]
  kIQ4_XS_R16,   // per group super-block: f16 d[16], scales_h [row 16][2 bytes], scales_l [4][row 16], qs [32][row
                 // 16][4]
  kQ8_0_R16_I8,  // Q8_0 for int8 activations, per group block: f16 d[16], then int8 codes as [quad 8][row 16][4]
  kCount,
};

struct DTypeInfo {
  std::string_view name;  // "q4_K", as llama.cpp spells it
  int block_elems;        // elements per block (1 for plain types)
  int block_bytes;        // bytes per block
  int ggml_id;            // ggml type id, -1 when GGUF has none
};

const DTypeInfo& dtype_info(DType t);
inline std::string_view dtype_name(DType t) { return dtype_info(t).name; }
std::optional<DType> dtype_from_ggml(uint32_t ggml_id);
std::optional<DType> dtype_from_name(std::string_view name);  // "q8_0", "f16", ... (case-insensitive)
inline bool is_quantized(DType t) { return dtype_info(t).block_elems > 1; }
// Storage bits per element, block scales included (Q8_0 8.5, Q4_0 4.5, F16 16).
inline double bits_per_element(DType t) {
  const DTypeInfo& i = dtype_info(t);
  return 8.0 * i.block_bytes / i.block_elems;
}
// Weight rows per interleaved group of a packed layout (kQ8_0_R16 .. kQ3_K_R16), 1 for row-major types.
inline constexpr int kPackedGroupRows = 16;
inline int group_rows(DType t) { return t >= DType::kQ8_0_R16 && t < DType::kCount ? kPackedGroupRows : 1; }
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
