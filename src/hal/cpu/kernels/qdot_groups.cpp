// Packing Q8_0 / Q4_0 weights into interleaved 16-row groups (layouts in qdot_groups.h).
#include "hal/cpu/kernels/qdot_groups.h"

#include <cstring>

#include "core/block_bytes.h"
#include "core/quant_act.h"
#include "core/thread_pool.h"

namespace cai::hal::cpu {

namespace {

constexpr int kR = kPackedGroupRows;
constexpr int kD = 2 * kR;  // bytes of a group block's 16 f16 scales

// One group block from the 16 row-major blocks at rows[r] (each kBlock bytes: f16 d, then the codes), moving the
// codes in units of kUnit bytes (Q8_0: a pair of columns, Q4_0: four qs bytes).
template <int kBlock, int kUnit>
void pack_block(const uint8_t* const* rows, uint8_t* dst) {
  for (int r = 0; r < kR; ++r) std::memcpy(dst + 2 * r, rows[r], 2);
  for (int u = 0; u < (kBlock - 2) / kUnit; ++u)
    for (int r = 0; r < kR; ++r) std::memcpy(dst + kD + (u * kR + r) * kUnit, rows[r] + 2 + u * kUnit, kUnit);
}

}  // namespace

DType packed_dtype(DType row_major) {
  switch (row_major) {
    case DType::kQ8_0: return DType::kQ8_0_R16;
    case DType::kQ4_0: return DType::kQ4_0_R16;
    default: return DType::kCount;
  }
}

void pack_row_groups(DType row_major, const uint8_t* src, uint8_t* dst, int64_t rows, int64_t in, ThreadPool* pool) {
  const int block = dtype_info(row_major).block_bytes;
  const auto pack = row_major == DType::kQ8_0 ? pack_block<34, 2> : pack_block<18, 4>;
  const size_t row = row_bytes(row_major, in), group = row * kR;
  const int64_t n_blocks = in / kActBlock;
  auto pack_groups = [&](int64_t g0, int64_t g1) {
    for (int64_t g = g0; g < g1; ++g) {
      const size_t base = static_cast<size_t>(g) * group;
      const uint8_t* at[kR];
      for (int64_t b = 0; b < n_blocks; ++b) {
        for (int r = 0; r < kR; ++r) at[r] = src + base + r * row + b * block;
        pack(at, dst + base + b * kR * block);
      }
    }
  };
  const int64_t n_groups = rows / kR;
  if (pool && pool->size() > 1)
    pool->parallel_for(n_groups, 16, pack_groups);
  else
    pack_groups(0, n_groups);
}

void dequantize_packed_row(DType packed, const uint8_t* w, int64_t r, int64_t in, float* out) {
  const bool q8 = packed == DType::kQ8_0_R16;
  const DType row_major = q8 ? DType::kQ8_0 : DType::kQ4_0;
  const int block = dtype_info(row_major).block_bytes, lane = static_cast<int>(r % kR);
  const uint8_t* group = w + static_cast<size_t>(r / kR) * row_bytes(row_major, in) * kR;
  for (int64_t b = 0; b < in / kActBlock; ++b) {
    const uint8_t* blk = group + b * kR * block;
    const float d = block_bytes::load_f16(blk + 2 * lane);
    float* o = out + b * kActBlock;
    if (q8) {
      for (int c = 0; c < kActBlock; ++c)
        o[c] = d * static_cast<float>(static_cast<int8_t>(blk[kD + ((c / 2) * kR + lane) * 2 + c % 2]));
    } else {
      for (int c = 0; c < 16; ++c) {
        const uint8_t q = blk[kD + ((c / 4) * kR + lane) * 4 + c % 4];
        o[c] = d * static_cast<float>((q & 0x0F) - 8);
        o[c + 16] = d * static_cast<float>((q >> 4) - 8);
      }
    }
  }
}

}  // namespace cai::hal::cpu
