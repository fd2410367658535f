// Tests for --precision fast on the CPU: activation quantization (int8 and int16), every integer dot kernel of every
// ISA against an exact dot of the same quantized values, the tables' coverage, and dense_gemm's fast path (close to
// the exact path, batch-invariant, exact where no kernel exists).
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <random>
#include <vector>

#include "core/quant_act.h"
#include "core/thread_pool.h"
#include "hal/cpu/kernels/gemm_kernels.h"
#include "hal/cpu/kernels/kernels.h"
#include "hal/cpu/kernels/qdot_groups.h"
#include "hal/cpu/kernels/qdot_kernels.h"
#include "ops/gemm_weights.h"

namespace cai::hal::cpu {
namespace {

TEST(QuantAct, BlocksHoldScaleCodesHalfSumsAndTheirTerms) {
  std::vector<float> x(64);
  for (int i = 0; i < 64; ++i) x[i] = (i % 7 - 3) * 0.25f;
  x[5] = -2.0f;                               // block 0's absmax → q = -127
  for (int i = 32; i < 64; ++i) x[i] = 0.0f;  // an all-zero block
  ActBlockQ8 b[2];
  quantize_act_row(x.data(), 64, b);
  EXPECT_FLOAT_EQ(b[0].d, 2.0f / 127.0f);
  EXPECT_EQ(b[0].q[5], -127);
  int sums[2] = {0, 0};
  for (int i = 0; i < 32; ++i) {
    EXPECT_EQ(b[0].q[i], static_cast<int>(std::nearbyint(x[i] * 127.0f / 2.0f))) << i;
    sums[i / 16] += b[0].q[i];
  }
  EXPECT_EQ(b[0].sum[0], sums[0]);
  EXPECT_EQ(b[0].sum[1], sums[1]);
  EXPECT_EQ(b[0].neg8_sum, -8 * (sums[0] + sums[1]));
  EXPECT_FLOAT_EQ(b[0].neg_d_sum, -b[0].d * static_cast<float>(sums[0] + sums[1]));
  EXPECT_EQ(b[1].d, 0.0f);
  EXPECT_EQ(b[1].neg8_sum, 0);
  for (int i = 0; i < 32; ++i) EXPECT_EQ(b[1].q[i], 0);
}

TEST(QuantAct, Q16BlocksHoldCodesAndSeparateScales) {
  std::vector<float> x(64);
  for (int i = 0; i < 64; ++i) x[i] = (i % 7 - 3) * 0.25f;
  x[5] = -2.0f;                               // block 0's absmax → q = -32767
  for (int i = 32; i < 64; ++i) x[i] = 0.0f;  // an all-zero block
  ActBlockQ16 b[2];
  float d[2];
  quantize_act_row_q16(x.data(), 64, b, d);
  EXPECT_FLOAT_EQ(d[0], 2.0f / 32767.0f);
  EXPECT_EQ(b[0].q[5], -32767);
  for (int i = 0; i < 32; ++i) {
    EXPECT_EQ(b[0].q[i], static_cast<int>(std::nearbyint(x[i] * 32767.0f / 2.0f))) << i;
    EXPECT_NEAR(d[0] * b[0].q[i], x[i], 0.5f * d[0] * 1.001f) << i;  // within half a step: 1/65534 of the absmax
  }
  EXPECT_EQ(d[1], 0.0f);
  for (int i = 0; i < 32; ++i) EXPECT_EQ(b[1].q[i], 0);
}

const QDotKernels* table_for(CpuIsa isa) {
#if defined(__x86_64__)
  if (isa == CpuIsa::kAvx2) return &qdot_kernels_avx2();
  if (isa == CpuIsa::kAvx512) return __builtin_cpu_supports("avx512vnni") ? &qdot_kernels_avx512vnni() : nullptr;
#endif
#if defined(__aarch64__)
  if (isa == CpuIsa::kNeon) return &qdot_kernels_neon();
  if (isa == CpuIsa::kDotprod) return &qdot_kernels_dotprod();
  if (isa == CpuIsa::kI8mm) return &qdot_kernels_i8mm();
  if (isa == CpuIsa::kSve) return &qdot_kernels_sve();
#endif
  return isa == CpuIsa::kScalar ? &qdot_kernels_scalar() : nullptr;
}

class QDotKernelsPerIsa : public ::testing::TestWithParam<CpuIsa> {};

// The activation rows of x (n values each) quantized for the int8 kernels (QDotFn): each value is d · q of its
// ActBlockQ8.
struct Int8Acts {
  QDotFn dot;
  int64_t in, ldx;
  std::vector<ActBlockQ8> q;
  Int8Acts(QDotFn f, int64_t n, const std::vector<float>& x)
      : dot(f), in(n), ldx(n / kActBlock), q(static_cast<size_t>(x.size() / n * ldx)) {
    for (size_t j = 0; j < x.size() / n; ++j) quantize_act_row(x.data() + j * in, in, q.data() + j * ldx);
  }
  double value(int j, int64_t c) const {
    const ActBlockQ8& a = q[static_cast<size_t>(j * ldx + c / kActBlock)];
    return static_cast<double>(a.d) * a.q[c % kActBlock];
  }
  void run(const uint8_t* w, int j, int nx, float* out) const { dot(w, q.data() + j * ldx, ldx, nx, in, out); }
};

// The same for the 16-bit kernels (QDot16Fn): codes in ActBlockQ16s, their scales apart.
struct Int16Acts {
  QDot16Fn dot;
  int64_t in, ldx;
  std::vector<ActBlockQ16> q;
  std::vector<float> d;
  Int16Acts(QDot16Fn f, int64_t n, const std::vector<float>& x)
      : dot(f), in(n), ldx(n / kActBlock), q(8 * ldx), d(8 * ldx) {
    for (int j = 0; j < 8; ++j) quantize_act_row_q16(x.data() + j * in, in, q.data() + j * ldx, d.data() + j * ldx);
  }
  double value(int j, int64_t c) const {
    const size_t b = static_cast<size_t>(j * ldx + c / kActBlock);
    return static_cast<double>(d[b]) * q[b].q[c % kActBlock];
  }
  void run(const uint8_t* w, int j, int nx, float* out) const {
    dot(w, q.data() + j * ldx, d.data() + j * ldx, ldx, nx, in, out);
  }
};

// Every kernel of `table` equals Σ dequant(w)·(d·q) of the quantized activations (integer products are exact; only the
// float scale sums round: 1e-5 of Σ|w·x|), for 1..8 rows, and row j is bit-identical whatever the row count. Returns
// how many weight types the table has kernels for.
template <class Acts, class Fn>
int expect_kernels_match_exact_dot(const Fn* table, std::mt19937& rng) {
  int n_types = 0;
  for (int ti = 0; ti < static_cast<int>(DType::kCount); ++ti) {
    if (!table[ti] || group_rows(static_cast<DType>(ti)) > 1) continue;  // the packed groups: GroupKernels* below
    ++n_types;
    const DType t = static_cast<DType>(ti);
    for (int64_t in : {256, 1280, 2816}) {
      Weights w = make_weights(t, 1, in, false, rng);
      std::vector<float> row(static_cast<size_t>(in));
      dequantize_row(t, w.bytes.data(), row.data(), in);
      const Acts acts(table[ti], in, gaussian(8 * in, rng));
      float all[8], solo[1];
      acts.run(w.bytes.data(), 0, 8, all);
      for (int j = 0; j < 8; ++j) {
        double ref = 0, mag = 0;
        for (int64_t c = 0; c < in; ++c) {
          const double v = static_cast<double>(row[c]) * acts.value(j, c);
          ref += v;
          mag += std::fabs(v);
        }
        EXPECT_NEAR(all[j], ref, 1e-5 * mag + 1e-30) << dtype_name(t) << " in=" << in << " row " << j;
        acts.run(w.bytes.data(), j, 1, solo);
        EXPECT_EQ(0, std::memcmp(solo, &all[j], sizeof(float))) << dtype_name(t) << " in=" << in << " row " << j;
      }
    }
  }
  return n_types;
}

TEST_P(QDotKernelsPerIsa, MatchExactDotOfQuantizedActivations) {
  const QDotKernels* k = table_for(GetParam());
  if (!k) GTEST_SKIP() << "this CPU lacks AVX-512 VNNI";
  std::mt19937 rng(99);
  EXPECT_GE(expect_kernels_match_exact_dot<Int8Acts>(k->dot, rng), 2);
}

// The same for the kernels against 16-bit activations.
TEST_P(QDotKernelsPerIsa, Int16KernelsMatchExactDotOfQuantizedActivations) {
  const QDotKernels* k = table_for(GetParam());
  if (!k) GTEST_SKIP() << "this CPU lacks AVX-512 VNNI";
  std::mt19937 rng(98);
  EXPECT_GE(expect_kernels_match_exact_dot<Int16Acts>(k->dot16, rng), 1);
}

// A row-major weight of `rows` rows packed into interleaved groups of type `packed` (qdot_groups.h).
std::vector<uint8_t> packed_copy(const Weights& w, DType packed) {
  std::vector<uint8_t> p(w.bytes.size());
  pack_row_groups(packed, w.bytes.data(), p.data(), w.out, w.in, nullptr);
  return p;
}

// The packed types for int8 activations (Q8_0's for the projections that take them among them), and all packed
// ones (kQ8_0_R16 takes 16-bit activations).
constexpr DType kInt8PackedTypes[] = {DType::kQ4_0_R16,   DType::kQ2_K_R16,   DType::kQ3_K_R16,
                                      DType::kQ4_K_R16,   DType::kQ5_K_R16,   DType::kQ6_K_R16,
                                      DType::kIQ4_NL_R16, DType::kIQ4_XS_R16, DType::kQ8_0_R16_I8};
std::vector<DType> packed_types() {
  std::vector<DType> all = {DType::kQ8_0_R16};
  all.insert(all.end(), std::begin(kInt8PackedTypes), std::end(kInt8PackedTypes));
  return all;
}

// The group kernels (packed Q8_0 with 16-bit activations; packed Q4_0, Q2_K..Q6_K, IQ4_NL, IQ4_XS and Q8_0's other
// layout with int8) equal the exact dot of each row's dequantized weights with the quantized activations (1e-5 of
// Σ|w·x|), row j is bit-identical whatever the row count, and every ISA gives the scalar table's bits (the same integer
// sums, then the same multiplies and fused multiply-adds).
template <class Acts, class Fn>
void expect_group_kernel_matches(DType packed_type, Fn kernel, Fn scalar_kernel, std::mt19937& rng) {
  const DType t = row_major_dtype(packed_type);
  for (int64_t in : {256, 1536}) {
    const int64_t rows = 2 * kPackedGroupRows;
    Weights w = make_weights(t, rows, in, false, rng);
    const std::vector<uint8_t> packed = packed_copy(w, packed_type);
    const std::vector<float> x = gaussian(8 * in, rng);
    const Acts acts(kernel, in, x), ref(scalar_kernel, in, x);
    std::vector<float> row(static_cast<size_t>(in));
    for (int64_t g = 0; g < rows / kPackedGroupRows; ++g) {
      const uint8_t* group = packed.data() + g * kPackedGroupRows * row_bytes(t, in);
      float all[8 * kPackedGroupRows], solo[kPackedGroupRows], scalar[8 * kPackedGroupRows];
      acts.run(group, 0, 8, all);
      ref.run(group, 0, 8, scalar);
      EXPECT_EQ(0, std::memcmp(all, scalar, sizeof all)) << dtype_name(t) << " in=" << in << ": not the scalar bits";
      for (int r = 0; r < kPackedGroupRows; ++r) {
        dequantize_row(t, w.bytes.data() + (g * kPackedGroupRows + r) * row_bytes(t, in), row.data(), in);
        for (int j = 0; j < 8; ++j) {
          double want = 0, mag = 0;
          for (int64_t c = 0; c < in; ++c) {
            const double v = static_cast<double>(row[c]) * acts.value(j, c);
            want += v;
            mag += std::fabs(v);
          }
          EXPECT_NEAR(all[j * kPackedGroupRows + r], want, 1e-5 * mag) << dtype_name(t) << " row " << r << " act " << j;
        }
      }
      for (int j = 0; j < 8; ++j) {
        acts.run(group, j, 1, solo);
        EXPECT_EQ(0, std::memcmp(solo, all + j * kPackedGroupRows, sizeof solo)) << dtype_name(t) << " act " << j;
      }
    }
  }
}

// Every row read back from its group (dequantize_packed_row, the embed op of a packed tied embedding) is the row
// dequantize_row gave before packing.
TEST(PackedRowGroups, RowsReadBackAsBeforePacking) {
  std::mt19937 rng(96);
  for (DType p : packed_types()) {
    const DType t = row_major_dtype(p);
    const int64_t in = dtype_info(t).block_elems == 32 ? 96 : 512;
    Weights w = make_weights(t, 3 * kPackedGroupRows, in, false, rng);
    EXPECT_EQ(packed_dtype(t, p == DType::kQ8_0_R16_I8 ? ActivationGrain::k8Bit : ActivationGrain::kWeight), p);
    const std::vector<uint8_t> packed = packed_copy(w, p);
    std::vector<float> want(static_cast<size_t>(in)), got(static_cast<size_t>(in));
    for (int64_t r = 0; r < w.out; ++r) {
      dequantize_row(t, w.bytes.data() + r * row_bytes(t, in), want.data(), in);
      dequantize_packed_row(p, packed.data(), r, in, got.data());
      ASSERT_EQ(0, std::memcmp(want.data(), got.data(), want.size() * sizeof(float))) << dtype_name(p) << " row " << r;
    }
  }
}

// Every table's activation quantizers give the bytes of core's quantize_act_row(_q16): gaussian rows, an all-zero
// block, and a block whose codes fall exactly halfway between integers (ties round to even).
TEST_P(QDotKernelsPerIsa, ActivationQuantizersGiveCoreBytes) {
  const QDotKernels* table = table_for(GetParam());
  if (!table) GTEST_SKIP() << "this CPU lacks the ISA";
  std::mt19937 rng(41);
  constexpr int64_t kIn = 8 * kActBlock;
  std::vector<float> x = gaussian(kIn, rng, 3.0f);
  for (int i = 0; i < kActBlock; ++i) x[kActBlock + i] = 0.0f;
  x[2 * kActBlock] = 127.0f;  // scale 1: the other values of block 2 are ±(i + 0.5), exact ties
  for (int i = 1; i < kActBlock; ++i) x[2 * kActBlock + i] = (i % 2 ? 1.0f : -1.0f) * (static_cast<float>(i) + 0.5f);
  const int64_t nb = kIn / kActBlock;
  std::vector<ActBlockQ8> want(nb), got(nb);
  quantize_act_row(x.data(), kIn, want.data());
  table->quantize(x.data(), kIn, got.data());
  for (int64_t b = 0; b < nb; ++b)
    EXPECT_EQ(0, std::memcmp(&want[b], &got[b], sizeof(ActBlockQ8))) << "int8 block " << b;
  EXPECT_EQ(got[2].q[1], 2);   // 1.5
  EXPECT_EQ(got[2].q[2], -2);  // -2.5
  std::vector<ActBlockQ16> want16(nb), got16(nb);
  std::vector<float> want_d(nb), got_d(nb);
  quantize_act_row_q16(x.data(), kIn, want16.data(), want_d.data());
  table->quantize16(x.data(), kIn, got16.data(), got_d.data());
  EXPECT_EQ(want_d, got_d);
  for (int64_t b = 0; b < nb; ++b)
    EXPECT_EQ(0, std::memcmp(&want16[b], &got16[b], sizeof(ActBlockQ16))) << "int16 block " << b;
}

TEST_P(QDotKernelsPerIsa, GroupKernelsMatchExactDotAndScalarBits) {
  const QDotKernels* k = table_for(GetParam());
  if (!k) GTEST_SKIP() << "this CPU lacks AVX-512 VNNI";
  const QDotKernels& scalar = qdot_kernels_scalar();
  std::mt19937 rng(97);
  const int q8 = static_cast<int>(DType::kQ8_0_R16);
  ASSERT_TRUE(k->dot16[q8]);
  expect_group_kernel_matches<Int16Acts>(DType::kQ8_0_R16, k->dot16[q8], scalar.dot16[q8], rng);
  for (DType t : kInt8PackedTypes) {
    const int p = static_cast<int>(t);
    ASSERT_TRUE(k->dot[p]) << dtype_name(t);
    expect_group_kernel_matches<Int8Acts>(t, k->dot[p], scalar.dot[p], rng);
  }
}

// A pair kernel (two consecutive groups at once) gives, for every activation row count, the bits of its table's
// kernel called on each group: rows 0..15 of its output are the first group's, 16..31 the second's.
TEST_P(QDotKernelsPerIsa, PairKernelsGiveEachGroupsBits) {
  const QDotKernels* k = table_for(GetParam());
  if (!k) GTEST_SKIP() << "this CPU lacks AVX-512 VNNI";
  std::mt19937 rng(95);
  int n_pairs = 0;
  for (int p = 0; p < static_cast<int>(DType::kCount); ++p) {
    if (!k->dot_pair[p]) continue;
    ++n_pairs;
    const DType t = row_major_dtype(static_cast<DType>(p));
    for (int64_t in : {256, 1536}) {
      const Weights w = make_weights(t, 2 * kPackedGroupRows, in, false, rng);
      const std::vector<uint8_t> packed = packed_copy(w, static_cast<DType>(p));
      const uint8_t* second = packed.data() + kPackedGroupRows * row_bytes(t, in);
      const Int8Acts acts(k->dot[p], in, gaussian(8 * in, rng));
      for (int nx = 1; nx <= 8; ++nx) {
        float both[8 * 2 * kPackedGroupRows], one[8 * kPackedGroupRows], two[8 * kPackedGroupRows];
        k->dot_pair[p](packed.data(), acts.q.data(), acts.ldx, nx, in, both);
        acts.run(packed.data(), 0, nx, one);
        acts.run(second, 0, nx, two);
        for (int j = 0; j < nx; ++j) {
          EXPECT_EQ(0, std::memcmp(both + 2 * j * kPackedGroupRows, one + j * kPackedGroupRows,
                                   sizeof(float) * kPackedGroupRows))
              << dtype_name(t) << " in=" << in << " nx=" << nx << " act " << j << ": first group";
          EXPECT_EQ(0, std::memcmp(both + (2 * j + 1) * kPackedGroupRows, two + j * kPackedGroupRows,
                                   sizeof(float) * kPackedGroupRows))
              << dtype_name(t) << " in=" << in << " nx=" << nx << " act " << j << ": second group";
        }
      }
    }
  }
  // The AVX-512 VNNI table pairs packed Q4_0 and Q8_0 for int8 activations; the AVX2 one (8-row halves) and the
  // scalar one pair nothing.
  EXPECT_EQ(n_pairs, GetParam() == CpuIsa::kAvx512 ? 2 : 0);
}

// A wide kernel (kWideDotRows activation rows at once, as ActWideBlock tiles) gives each row the bits of its table's
// kernel on that row, for both groups of a two-group weight.
TEST_P(QDotKernelsPerIsa, WideKernelsGiveTheBitsOfDot) {
  const QDotKernels* k = table_for(GetParam());
  if (!k) GTEST_SKIP() << "this CPU lacks AVX-512 VNNI";
  std::mt19937 rng(94);
  int n_wide = 0;
  for (int p = 0; p < static_cast<int>(DType::kCount); ++p) {
    if (!k->dot_wide[p]) continue;
    ++n_wide;
    const DType t = row_major_dtype(static_cast<DType>(p));
    for (int64_t in : {256, 1536}) {
      const Weights w = make_weights(t, 2 * kPackedGroupRows, in, false, rng);
      const std::vector<uint8_t> packed = packed_copy(w, static_cast<DType>(p));
      const Int8Acts acts(k->dot[p], in, gaussian(kWideDotRows * in, rng));
      std::vector<ActWideBlock> tile(static_cast<size_t>(acts.ldx));
      for (int j = 0; j < kWideDotRows; ++j)
        for (int64_t b = 0; b < acts.ldx; ++b) set_wide_row(acts.q[j * acts.ldx + b], j, tile[b]);
      for (int g = 0; g < 2; ++g) {
        const uint8_t* group = packed.data() + g * kPackedGroupRows * row_bytes(t, in);
        float wide[kWideDotRows * kPackedGroupRows], one[kPackedGroupRows];
        k->dot_wide[p](group, tile.data(), in, wide);
        for (int j = 0; j < kWideDotRows; ++j) {
          acts.run(group, j, 1, one);
          EXPECT_EQ(0, std::memcmp(wide + j * kPackedGroupRows, one, sizeof one))
              << dtype_name(t) << " in=" << in << " group " << g << " act " << j;
        }
      }
    }
  }
  // The AVX-512 VNNI, i8mm and sve tables have 16-row tiles for packed Q4_0, IQ4_NL and Q8_0 for int8 activations
  // (Q6_K's two halves of 16 chains do not fit, so AVX-512 runs 8 rows twice); AVX2's 16 registers hold no 16 chains,
  // and sdot alone gains nothing from a tile over NX-row calls.
  const CpuIsa isa = GetParam();
  EXPECT_EQ(n_wide, isa == CpuIsa::kAvx512 || isa == CpuIsa::kI8mm || isa == CpuIsa::kSve ? 3 : 0);
}

INSTANTIATE_TEST_SUITE_P(Isas, QDotKernelsPerIsa, ::testing::ValuesIn(available_isas()),
                         [](const auto& info) { return std::string(cpu_isa_name(info.param)); });

// Which weight types take the fast path must not depend on the ISA: every table has the scalar table's kernels.
TEST(QDotKernels, EveryIsaCoversTheScalarTable) {
  const QDotKernels& scalar = qdot_kernels_scalar();
  for (CpuIsa isa : available_isas()) {
    const QDotKernels* k = table_for(isa);
    if (!k) continue;
    for (int t = 0; t < static_cast<int>(DType::kCount); ++t) {
      EXPECT_EQ(k->dot[t] != nullptr, scalar.dot[t] != nullptr)
          << cpu_isa_name(isa) << " " << dtype_name(static_cast<DType>(t));
      EXPECT_EQ(k->dot16[t] != nullptr, scalar.dot16[t] != nullptr)
          << cpu_isa_name(isa) << " int16 " << dtype_name(static_cast<DType>(t));
    }
  }
  for (DType t : {DType::kQ4_0, DType::kQ2_K, DType::kQ3_K, DType::kQ4_K, DType::kQ5_K, DType::kQ6_K})
    EXPECT_NE(scalar.dot[static_cast<int>(t)], nullptr) << dtype_name(t);
  for (DType t : kInt8PackedTypes) EXPECT_NE(scalar.dot[static_cast<int>(t)], nullptr) << dtype_name(t);
  EXPECT_NE(scalar.dot16[static_cast<int>(DType::kQ8_0)], nullptr) << "Q8_0 takes 16-bit activations";
}

struct GemmRun {
  std::vector<float> y;
  Status status;
};

GemmRun gemm(Weights& w, const std::vector<float>& x, int64_t n, const std::vector<float>& bias, Precision p,
             ThreadPool* pool) {
  GemmRun r{std::vector<float>(static_cast<size_t>(n * w.out)), {}};
  OpContext ctx{pool, nullptr, true};
  ctx.precision = p;
  const TensorView bv = TensorView::make(const_cast<float*>(bias.data()), DType::kF32, {w.out});
  r.status = dense_gemm(ctx, w.view(), TensorView::make(const_cast<float*>(x.data()), DType::kF32, {n, w.in}), &bv,
                        TensorView::make(r.y.data(), DType::kF32, {n, w.out}));
  return r;
}

// Every output of `fast` within activation rounding of `exact` (a few 1e-3 of Σ|w·x| for int8, 1e-4 for Q8_0's int16;
// identical for F16, which has no integer kernel); w: the row-major weights both were computed from.
void expect_fast_close_to_exact(const Weights& w, const std::vector<float>& x, const std::vector<float>& bias,
                                int64_t n, const GemmRun& fast, const GemmRun& exact, DType shown) {
  const DType t = w.dtype;
  const int64_t in = w.in;
  std::vector<float> row(static_cast<size_t>(in));
  for (int64_t r = 0; r < w.out; ++r) {
    dequantize_row(t, w.bytes.data() + r * row_bytes(t, in), row.data(), in);
    for (int64_t i = 0; i < n; ++i) {
      double mag = std::fabs(bias[r]);
      for (int64_t c = 0; c < in; ++c) mag += std::fabs(static_cast<double>(row[c]) * x[i * in + c]);
      const size_t at = static_cast<size_t>(i * w.out + r);
      if (t == DType::kF16)
        EXPECT_EQ(fast.y[at], exact.y[at]) << "f16 has no integer kernel: exact result";
      else  // Q8_0's 16-bit activations round at 1/65534 of each block's absmax, int8 ones at 1/254
        EXPECT_NEAR(fast.y[at], exact.y[at], (shown == DType::kQ8_0 || shown == DType::kQ8_0_R16 ? 1e-4 : 4e-3) * mag)
            << dtype_name(shown) << " row " << r << " act " << i;
    }
  }
}

// Activation rows `rows` of x run alone give the bits they got in the batch `fast` (batch invariance).
void expect_solo_rows_match(Weights& w, const std::vector<float>& x, const std::vector<float>& bias,
                            std::initializer_list<int64_t> rows, const GemmRun& fast, ThreadPool* pool) {
  for (int64_t i : rows) {
    std::vector<float> xi(x.begin() + i * w.in, x.begin() + (i + 1) * w.in);
    GemmRun solo = gemm(w, xi, 1, bias, Precision::kFast, pool);
    ASSERT_TRUE(solo.status.ok());
    EXPECT_EQ(0, std::memcmp(solo.y.data(), fast.y.data() + i * w.out, solo.y.size() * sizeof(float)))
        << dtype_name(w.dtype) << " activation row " << i;
  }
}

class GemmFastPerIsa : public ::testing::TestWithParam<CpuIsa> {};

// The fast path stays within activation rounding of the exact one (a few 1e-3 of Σ|w·x| for int8, 1e-4 for Q8_0's
// int16), each row is bit-identical alone and in a batch of 37, and a weight type without an integer kernel (F16) is
// computed exactly.
TEST_P(GemmFastPerIsa, CloseToExactAndBatchInvariant) {
  IsaGuard guard;
  ASSERT_TRUE(set_active_cpu_isa(GetParam()).ok());
  ThreadPool pool(2);
  std::mt19937 rng(5);
  for (DType t : {DType::kQ8_0, DType::kQ4_0, DType::kQ2_K, DType::kQ3_K, DType::kQ4_K, DType::kQ5_K, DType::kQ6_K,
                  DType::kF16}) {
    const int64_t n = 37, in = 512;
    Weights w = make_weights(t, 24, in, false, rng);
    auto x = gaussian(n * in, rng);
    auto bias = gaussian(w.out, rng);
    GemmRun exact = gemm(w, x, n, bias, Precision::kExact, &pool);
    GemmRun fast = gemm(w, x, n, bias, Precision::kFast, &pool);
    ASSERT_TRUE(exact.status.ok() && fast.status.ok()) << fast.status.to_string();
    expect_fast_close_to_exact(w, x, bias, n, fast, exact, t);
    expect_solo_rows_match(w, x, bias, {0, 17, 36}, fast, &pool);
  }
}

// Packed weights (interleaved row groups) through dense_gemm: within activation rounding of the exact path on the
// row-major weights, batch-invariant, bias added, and refused with a clear error on the exact path. 37 activation rows
// take the pair kernels where the ISA has them: on one thread groups 0 and 1 go as a pair, on the pool's one-group
// chunks each alone, and the bits agree. 21 rows take a 16-row tile where the ISA has one, then 5 rows.
TEST_P(GemmFastPerIsa, PackedWeightsCloseToExactAndBatchInvariant) {
  IsaGuard guard;
  ASSERT_TRUE(set_active_cpu_isa(GetParam()).ok());
  ThreadPool pool(2);
  std::mt19937 rng(6);
  for (DType packed : packed_types())
    for (const int64_t n : {37, 21}) {
      const DType t = row_major_dtype(packed);
      const int64_t in = dtype_info(t).block_elems == 32 ? 320 : 512;
      Weights w = make_weights(t, 48, in, false, rng);
      Weights p = w;
      p.bytes = packed_copy(w, packed);
      p.dtype = packed;
      auto x = gaussian(n * in, rng);
      auto bias = gaussian(w.out, rng);
      GemmRun exact = gemm(w, x, n, bias, Precision::kExact, &pool);
      GemmRun fast = gemm(p, x, n, bias, Precision::kFast, &pool);
      ASSERT_TRUE(exact.status.ok() && fast.status.ok()) << fast.status.to_string();
      expect_fast_close_to_exact(w, x, bias, n, fast, exact, p.dtype);
      expect_solo_rows_match(p, x, bias, {0, 8, 15, n - 1}, fast, &pool);
      GemmRun one_thread = gemm(p, x, n, bias, Precision::kFast, nullptr);
      EXPECT_EQ(one_thread.y, fast.y) << dtype_name(t);
      GemmRun refused = gemm(p, x, n, bias, Precision::kExact, &pool);
      EXPECT_EQ(refused.status.code(), StatusCode::kUnsupported);
      EXPECT_NE(refused.status.message().find("packed for --precision fast"), std::string::npos)
          << refused.status.to_string();
    }
}

// sparse_moe over a pool of 2 threads gives the bits it gives on one: with at least as many selected experts as
// threads (a decode step; a prompt whose experts have 8 and 2 tokens, the larger taken first) the experts run side by
// side with one-thread GEMMs, with fewer they run in turn with pooled GEMMs. Both precisions; packed Q4_0, row-major
// Q8_0, and Q8_0 packed as a model loads it (gate and up for 8-bit activations, down for 16-bit).
TEST(SparseMoe, ThreadsDoNotChangeTheBits) {
  std::mt19937 rng(9);
  constexpr int64_t kExperts = 4, kHidden = 256, kFfn = 160;
  struct Case {
    DType t, gate_up, down;  // kCount: row-major
  };
  for (const Case& c :
       {Case{DType::kQ4_0, DType::kQ4_0_R16, DType::kQ4_0_R16}, Case{DType::kQ8_0, DType::kCount, DType::kCount},
        Case{DType::kQ8_0, DType::kQ8_0_R16_I8, DType::kQ8_0_R16}}) {
    const DType t = c.t;
    Weights gate = make_weights(t, kExperts * kFfn, kHidden, false, rng),
            up = make_weights(t, kExperts * kFfn, kHidden, false, rng),
            down = make_weights(t, kExperts * kHidden, kFfn, false, rng);
    const bool pack = c.down != DType::kCount;
    ExpertWeights w;
    const auto stack = [&](Weights& m, DType packed, int64_t out, int64_t in) {
      if (pack) {
        m.bytes = packed_copy(m, packed);
        m.dtype = packed;
      }
      return TensorView::make(m.bytes.data(), m.dtype, {kExperts, out, in});
    };
    w.gate = stack(gate, c.gate_up, kFfn, kHidden);
    w.up = stack(up, c.gate_up, kFfn, kHidden);
    w.down = stack(down, c.down, kHidden, kFfn);
    // Token 0 picks experts 2 and 0 (a decode step of its own); 5 tokens pick expert 1 eight times and 3 twice; 3
    // tokens pick only expert 1 (one expert, fewer than threads).
    const std::vector<std::vector<int32_t>> id_sets = {{2, 0}, {1, 1, 1, 3, 1, 1, 3, 1, 1, 1}, {1, 1, 1, 1, 1, 1}};
    for (const std::vector<int32_t>& ids : id_sets) {
      const int64_t n = static_cast<int64_t>(ids.size()) / 2;
      const std::vector<float> x = gaussian(n * kHidden, rng), weights = gaussian(n * 2, rng);
      std::vector<int32_t> id_copy = ids;
      for (Precision precision : {Precision::kExact, Precision::kFast}) {
        if (pack && precision == Precision::kExact) continue;  // packed weights run only on the fast path
        std::vector<float> alone(static_cast<size_t>(n * kHidden)), pooled(alone.size());
        ThreadPool pool(2);
        for (auto [out, p] : {std::pair{&alone, static_cast<ThreadPool*>(nullptr)}, std::pair{&pooled, &pool}}) {
          OpContext ctx{p, nullptr, false};
          ctx.precision = precision;
          const Status st =
              sparse_moe(ctx, w, TensorView::make(const_cast<float*>(x.data()), DType::kF32, {n, kHidden}),
                         TensorView::make(id_copy.data(), DType::kI32, {n, 2}),
                         TensorView::make(const_cast<float*>(weights.data()), DType::kF32, {n, 2}),
                         TensorView::make(out->data(), DType::kF32, {n, kHidden}));
          ASSERT_TRUE(st.ok()) << st.to_string();
        }
        EXPECT_EQ(0, std::memcmp(alone.data(), pooled.data(), alone.size() * sizeof(float)))
            << dtype_name(w.gate.dtype) << " n=" << n << (precision == Precision::kFast ? " fast" : " exact");
        float mag = 0;
        for (float v : alone) mag = std::max(mag, std::fabs(v));
        EXPECT_GT(mag, 0.0f);
      }
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Isas, GemmFastPerIsa, ::testing::ValuesIn(available_isas()),
                         [](const auto& info) { return std::string(cpu_isa_name(info.param)); });

}  // namespace
}  // namespace cai::hal::cpu
