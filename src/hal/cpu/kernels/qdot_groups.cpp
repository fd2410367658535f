// Packing weights into interleaved 16-row groups and reading rows back (layouts in qdot_groups.h). Each layout is a
// list of fields of the row-major block; both directions walk the same list.
#include "hal/cpu/kernels/qdot_groups.h"

#include <cstring>
#include <vector>

#include "core/quant.h"
#include "core/thread_pool.h"

namespace cai::hal::cpu {

namespace {

constexpr int kR = kPackedGroupRows;

// Bytes src .. src + count · unit of a row-major block, in units: unit u of row r lands at dst + (u · kR + r) · unit
// of the group block.
struct Field {
  int src, unit, count, dst;
};

// A row-major type's layout for activations of `grain`; a type without a layout of its own for 8-bit activations
// (its codes take them anyway) uses its kWeight one for both.
struct Layout {
  DType row_major, packed;
  std::vector<Field> fields;
  hal::ActivationGrain grain = hal::ActivationGrain::kWeight;
};

const std::vector<Layout>& layouts() {
  static const std::vector<Layout> all = {
      {DType::kQ8_0, DType::kQ8_0_R16, {{0, 2, 1, 0}, {2, 2, 16, 2 * kR}}},
      {DType::kQ4_0, DType::kQ4_0_R16, {{0, 2, 1, 0}, {2, 4, 4, 2 * kR}}},
      {DType::kQ4_K, DType::kQ4_K_R16, {{0, 2, 1, 0}, {2, 2, 1, 2 * kR}, {4, 1, 12, 4 * kR}, {16, 4, 32, 16 * kR}}},
      {DType::kQ5_K,
       DType::kQ5_K_R16,
       {{0, 2, 1, 0}, {2, 2, 1, 2 * kR}, {4, 1, 12, 4 * kR}, {16, 4, 8, 16 * kR}, {48, 4, 32, 48 * kR}}},
      {DType::kQ6_K,
       DType::kQ6_K_R16,
       {{208, 2, 1, 0}, {192, 1, 16, 2 * kR}, {0, 4, 32, 18 * kR}, {128, 4, 16, 18 * kR + 128 * kR}}},
      {DType::kQ2_K, DType::kQ2_K_R16, {{80, 2, 1, 0}, {82, 2, 1, 2 * kR}, {0, 1, 16, 4 * kR}, {16, 4, 16, 20 * kR}}},
      {DType::kQ3_K, DType::kQ3_K_R16, {{108, 2, 1, 0}, {96, 1, 12, 2 * kR}, {0, 4, 8, 14 * kR}, {32, 4, 16, 46 * kR}}},
      {DType::kIQ4_NL, DType::kIQ4_NL_R16, {{0, 2, 1, 0}, {2, 4, 4, 2 * kR}}},
      {DType::kIQ4_XS, DType::kIQ4_XS_R16, {{0, 2, 1, 0}, {2, 2, 1, 2 * kR}, {4, 1, 4, 4 * kR}, {8, 4, 32, 8 * kR}}},
      {DType::kQ8_0, DType::kQ8_0_R16_I8, {{0, 2, 1, 0}, {2, 4, 8, 2 * kR}}, hal::ActivationGrain::k8Bit},
  };
  return all;
}

const Layout* layout_of_packed(DType packed) {
  for (const Layout& l : layouts())
    if (l.packed == packed) return &l;
  return nullptr;
}

// Where unit u of field f of row r lies in the group block.
int packed_at(const Field& f, int u, int r) { return f.dst + (u * kR + r) * f.unit; }

// The count units of U bytes of one field: from src on (consecutive) to dst on, kR units apart (packing), or back
// (reading a row). One loop per unit size, so each copy is a single move.
template <int U>
void scatter_units(uint8_t* dst, const uint8_t* src, int count) {
  for (int u = 0; u < count; ++u) std::memcpy(dst + u * kR * U, src + u * U, U);
}
template <int U>
void gather_units(uint8_t* dst, const uint8_t* src, int count) {
  for (int u = 0; u < count; ++u) std::memcpy(dst + u * U, src + u * kR * U, U);
}

// Field f of row r: from its row-major block to the group block (pack) or back.
void pack_field(const Field& f, int r, const uint8_t* row_block, uint8_t* group_block) {
  uint8_t* dst = group_block + packed_at(f, 0, r);
  const uint8_t* src = row_block + f.src;
  switch (f.unit) {
    case 1: scatter_units<1>(dst, src, f.count); return;
    case 2: scatter_units<2>(dst, src, f.count); return;
    default: scatter_units<4>(dst, src, f.count); return;
  }
}
void unpack_field(const Field& f, int r, const uint8_t* group_block, uint8_t* row_block) {
  uint8_t* dst = row_block + f.src;
  const uint8_t* src = group_block + packed_at(f, 0, r);
  switch (f.unit) {
    case 1: gather_units<1>(dst, src, f.count); return;
    case 2: gather_units<2>(dst, src, f.count); return;
    default: gather_units<4>(dst, src, f.count); return;
  }
}

}  // namespace

DType packed_dtype(DType row_major, hal::ActivationGrain grain) {
  DType for_weight = DType::kCount;
  for (const Layout& l : layouts()) {
    if (l.row_major != row_major) continue;
    if (l.grain == grain) return l.packed;
    if (l.grain == hal::ActivationGrain::kWeight) for_weight = l.packed;
  }
  return for_weight;
}

DType row_major_dtype(DType packed) {
  const Layout* l = layout_of_packed(packed);
  return l ? l->row_major : DType::kCount;
}

void pack_row_groups(DType packed, const uint8_t* src, uint8_t* dst, int64_t rows, int64_t in, ThreadPool* pool) {
  const Layout& l = *layout_of_packed(packed);
  const DTypeInfo& info = dtype_info(l.row_major);
  const size_t row = row_bytes(l.row_major, in), group = row * kR;
  const int64_t n_blocks = in / info.block_elems;
  auto pack_groups = [&](int64_t g0, int64_t g1) {
    for (int64_t g = g0; g < g1; ++g) {
      const size_t base = static_cast<size_t>(g) * group;
      for (int64_t b = 0; b < n_blocks; ++b) {
        uint8_t* out = dst + base + b * kR * info.block_bytes;
        for (int r = 0; r < kR; ++r) {
          const uint8_t* in_block = src + base + r * row + b * info.block_bytes;
          for (const Field& f : l.fields) pack_field(f, r, in_block, out);
        }
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
  const Layout& l = *layout_of_packed(packed);
  const DTypeInfo& info = dtype_info(l.row_major);
  const int lane = static_cast<int>(r % kR);
  const uint8_t* group = w + static_cast<size_t>(r / kR) * row_bytes(l.row_major, in) * kR;
  uint8_t block[256];
  for (int64_t b = 0; b < in / info.block_elems; ++b) {
    const uint8_t* packed_block = group + b * kR * info.block_bytes;
    for (const Field& f : l.fields) unpack_field(f, lane, packed_block, block);
    dequantize_row(l.row_major, block, out + b * info.block_elems, info.block_elems);
  }
}

}  // namespace cai::hal::cpu
