// Tests for dense_gemm: every weight dtype × shapes × ISA (scalar/avx2/avx512) × bias × threads vs a double
// reference over dequantize_row, bit-exact per-ISA dequant tables, FP8 block scales on ragged shapes, NaN codes and
// the error paths.
#include "hal/cpu/kernels/kernels.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstring>
#include <random>
#include <vector>

#include "core/quant.h"
#include "core/thread_pool.h"
#include "hal/cpu/kernels/cpu_features.h"
#include "hal/cpu/kernels/gemm_kernels.h"
#include "ops/gemm_weights.h"

namespace cai::hal::cpu {
namespace {

// y_ref = x · dequant(w)^T + bias in double; tol = 1e-5 · Σ|w·x| per element (+ a floor for tiny sums).
void reference(Weights& w, const std::vector<float>& x, const float* bias, int64_t n, std::vector<double>* y,
               std::vector<double>* tol) {
  std::vector<float> row(static_cast<size_t>(w.in));
  y->assign(static_cast<size_t>(n * w.out), 0.0);
  tol->assign(y->size(), 0.0);
  int64_t n_cb = (w.in + 127) / 128;
  for (int64_t r = 0; r < w.out; ++r) {
    dequantize_row(w.dtype, w.bytes.data() + r * row_bytes(w.dtype, w.in), row.data(), w.in);
    if (!w.scale.empty())
      for (int64_t c = 0; c < w.in; ++c) row[c] *= w.scale[(r / 128) * n_cb + c / 128];
    for (int64_t i = 0; i < n; ++i) {
      double s = bias ? bias[r] : 0.0, a = bias ? std::fabs(bias[r]) : 0.0;
      for (int64_t c = 0; c < w.in; ++c) {
        s += static_cast<double>(row[c]) * x[i * w.in + c];
        a += std::fabs(static_cast<double>(row[c]) * x[i * w.in + c]);
      }
      (*y)[i * w.out + r] = s;
      (*tol)[i * w.out + r] = 1e-5 * a + 1e-30;
    }
  }
}

// Runs the GEMM and checks it against the reference; returns the number of mismatching elements.
int check(Weights& w, int64_t n, bool with_bias, ThreadPool* pool, std::mt19937& rng, bool invariant = false) {
  auto x = gaussian(n * w.in, rng);
  auto bias = gaussian(w.out, rng);
  std::vector<float> y(static_cast<size_t>(n * w.out), NAN);
  TensorView xv = TensorView::make(x.data(), DType::kF32, {n, w.in});
  TensorView yv = TensorView::make(y.data(), DType::kF32, {n, w.out});
  TensorView bv = TensorView::make(bias.data(), DType::kF32, {w.out});
  OpContext ctx{pool, nullptr, invariant};
  Status st = dense_gemm(ctx, w.view(), xv, with_bias ? &bv : nullptr, yv);
  EXPECT_TRUE(st.ok()) << st.to_string();
  std::vector<double> ref, tol;
  reference(w, x, with_bias ? bias.data() : nullptr, n, &ref, &tol);
  int bad = 0;
  for (size_t i = 0; i < y.size(); ++i) {
    if (!(std::fabs(y[i] - ref[i]) <= tol[i])) {
      if (++bad <= 3) ADD_FAILURE() << "element " << i << ": got " << y[i] << " want " << ref[i] << " tol " << tol[i];
    }
  }
  return bad;
}

class GemmAllTypes : public ::testing::TestWithParam<CpuIsa> {};

TEST_P(GemmAllTypes, MatchesDequantizedReference) {
  IsaGuard guard;
  ASSERT_TRUE(set_active_cpu_isa(GetParam()).ok());
  ThreadPool pool(2);
  std::mt19937 rng(1234);
  const DType types[] = {DType::kF32,  DType::kF16,  DType::kBF16, DType::kQ8_0,   DType::kQ4_0,
                         DType::kQ4_K, DType::kQ5_K, DType::kQ6_K, DType::kF8_E4M3};
  struct Shape {
    int64_t n, in, out;
  };
  // n = 1..8 take the fused path (groups of 4 rows + remainder), larger n the packed-panel path.
  const Shape shapes[] = {{1, 256, 33},  {3, 512, 33},  {5, 256, 7},  {8, 768, 40},
                          {17, 256, 33}, {64, 512, 65}, {9, 1280, 70}};
  int case_no = 0;
  for (DType t : types) {
    for (const Shape& s : shapes) {
      Weights w = make_weights(t, s.out, s.in, false, rng);
      bool bias = (case_no % 2) == 0;
      ThreadPool* p = (case_no % 3) == 0 ? nullptr : &pool;
      ++case_no;
      EXPECT_EQ(check(w, s.n, bias, p, rng), 0)
          << dtype_name(t) << " n=" << s.n << " in=" << s.in << " out=" << s.out << " bias=" << bias;
    }
  }
}

// Every GGUF type past the first eight on random valid blocks: the fused path (n <= 8), the batch-invariant path
// (tiled where the ISA has a tile, n = 9..16) and the packed-panel path (larger n).
TEST_P(GemmAllTypes, BlockOnlyTypesMatchDequantizedReference) {
  IsaGuard guard;
  ASSERT_TRUE(set_active_cpu_isa(GetParam()).ok());
  ThreadPool pool(2);
  std::mt19937 rng(4321);
  struct Shape {
    int64_t n, in, out;
    bool invariant;
  };
  const Shape shapes[] = {{1, 256, 17, false}, {4, 512, 9, false},   {7, 768, 13, false}, {8, 256, 20, false},
                          {9, 512, 13, true},  {16, 1024, 19, true}, {12, 256, 11, true}, {40, 512, 35, false}};
  for (DType t : kBlockOnlyTypes) {
    for (const Shape& s : shapes) {
      Weights w = make_weights(t, s.out, s.in, false, rng);
      EXPECT_EQ(check(w, s.n, s.n % 2 == 0, s.n % 3 ? &pool : nullptr, rng, s.invariant), 0)
          << dtype_name(t) << " n=" << s.n << " in=" << s.in << " invariant=" << s.invariant;
    }
  }
}

const GemmKernels& kernels_of(CpuIsa isa) {
  switch (isa) {
#if defined(__x86_64__)
    case CpuIsa::kAvx512: return gemm_kernels_avx512();
    case CpuIsa::kAvx2: return gemm_kernels_avx2();
#endif
#if defined(__aarch64__)
    case CpuIsa::kSve:
    case CpuIsa::kI8mm:
    case CpuIsa::kDotprod:
    case CpuIsa::kNeon: return gemm_kernels_neon();
#endif
    default: return gemm_kernels_scalar();
  }
}

// The attention dot of the SIMD tables in portable C++: four chains of 8 lanes over 32 elements at a time, the 8-lane
// steps left on chain 0, the chains added (0 + 1) + (2 + 3), the lanes (i, i + 4), (i, i + 2), (0, 1), then the last
// elements one by one, every step a fused multiply-add.
float simd_order_dot(const float* x, const float* v, int64_t n) {
  float a[4][8] = {};
  int64_t d = 0;
  for (; d + 32 <= n; d += 32)
    for (int c = 0; c < 4; ++c)
      for (int l = 0; l < 8; ++l) a[c][l] = std::fma(x[d + 8 * c + l], v[d + 8 * c + l], a[c][l]);
  for (; d + 8 <= n; d += 8)
    for (int l = 0; l < 8; ++l) a[0][l] = std::fma(x[d + l], v[d + l], a[0][l]);
  float s[8], t4[4];
  for (int l = 0; l < 8; ++l) s[l] = (a[0][l] + a[1][l]) + (a[2][l] + a[3][l]);
  for (int l = 0; l < 4; ++l) t4[l] = s[l] + s[l + 4];
  float dot = (t4[0] + t4[2]) + (t4[1] + t4[3]);
  for (; d < n; ++d) dot = std::fma(x[d], v[d], dot);
  return dot;
}

// The attention scores of every SIMD table (AVX2, AVX-512, NEON) have the bits of simd_order_dot: the same on x86-64
// and ARM64 for the same inputs.
TEST(GemmRowsKernels, SimdTablesShareOneDotOrder) {
  std::mt19937 rng(9);
  int checked = 0;
  for (CpuIsa isa : available_isas()) {
    if (isa == CpuIsa::kScalar) continue;
    const GemmKernels& k = kernels_of(isa);
    for (int64_t n : {1, 5, 8, 31, 32, 40, 64, 100, 128, 576}) {
      const auto q = gaussian(n, rng), row = gaussian(n, rng);
      float got = 0;
      k.rows_dot(q.data(), n, 1, row.data(), n, 1, n, &got, 1);
      EXPECT_EQ(got, simd_order_dot(q.data(), row.data(), n)) << cpu_isa_name(isa) << " n=" << n;
    }
    ++checked;
  }
  if (checked == 0) GTEST_SKIP() << "no SIMD kernel family on this CPU";
}

// Each ISA's row dequant equals dequantize_row bit for bit (the panel and tiled paths use it), for every quant type.
TEST_P(GemmAllTypes, DequantTablesAreBitExact) {
  std::mt19937 rng(2024);
  const GemmKernels& k = kernels_of(GetParam());
  std::vector<DType> types(std::begin(kBlockOnlyTypes), std::end(kBlockOnlyTypes));
  for (DType t : {DType::kQ8_0, DType::kQ4_0, DType::kQ4_K, DType::kQ5_K, DType::kQ6_K, DType::kF16, DType::kBF16,
                  DType::kF8_E4M3})
    types.push_back(t);
  for (DType t : types) {
    const int64_t in = 1024;
    Weights w = make_weights(t, 3, in, false, rng);
    std::vector<float> got(static_cast<size_t>(in)), want(static_cast<size_t>(in));
    for (int64_t r = 0; r < w.out; ++r) {
      const uint8_t* row = w.bytes.data() + r * row_bytes(t, in);
      ASSERT_NE(k.dequant[static_cast<int>(t)], nullptr) << dtype_name(t);
      k.dequant[static_cast<int>(t)](row, got.data(), in);
      dequantize_row(t, row, want.data(), in);
      for (int64_t c = 0; c < in; ++c)
        ASSERT_EQ(0, std::memcmp(&got[c], &want[c], sizeof(float)))
            << dtype_name(t) << " row " << r << " col " << c << ": got " << got[c] << " want " << want[c];
    }
  }
}

// Batch-invariant mode on every ISA: each row of a batch (fused path, or tiled where the ISA has a tile) equals the row
// computed alone, bit for bit, threaded and with bias.
TEST_P(GemmAllTypes, BatchInvariantRowsEqualSoloRows) {
  IsaGuard guard;
  ASSERT_TRUE(set_active_cpu_isa(GetParam()).ok());
  ThreadPool pool(2);
  std::mt19937 rng(77);
  std::vector<DType> types = {DType::kF32,  DType::kF16,  DType::kBF16, DType::kQ8_0,
                              DType::kQ4_0, DType::kQ4_K, DType::kQ6_K};
  types.insert(types.end(), std::begin(kBlockOnlyTypes), std::end(kBlockOnlyTypes));
  for (DType t : types)
    for (auto [n, in] : {std::pair<int64_t, int64_t>{6, 256}, {16, 512}, {37, 1280}}) {
      Weights w = make_weights(t, 40, in, false, rng);
      auto x = gaussian(n * in, rng);
      auto bias = gaussian(w.out, rng);
      const TensorView bv = TensorView::make(bias.data(), DType::kF32, {w.out});
      const OpContext ctx{&pool, nullptr, true};
      std::vector<float> y(static_cast<size_t>(n * w.out)), y1(static_cast<size_t>(w.out));
      ASSERT_TRUE(dense_gemm(ctx, w.view(), TensorView::make(x.data(), DType::kF32, {n, in}), &bv,
                             TensorView::make(y.data(), DType::kF32, {n, w.out}))
                      .ok());
      for (int64_t i = 0; i < n; ++i) {
        ASSERT_TRUE(dense_gemm(ctx, w.view(), TensorView::make(x.data() + i * in, DType::kF32, {1, in}), &bv,
                               TensorView::make(y1.data(), DType::kF32, {1, w.out}))
                        .ok());
        ASSERT_EQ(0, std::memcmp(y1.data(), y.data() + i * w.out, y1.size() * sizeof(float)))
            << dtype_name(t) << " n=" << n << " in=" << in << " row " << i;
      }
    }
}

TEST_P(GemmAllTypes, RaggedInnerDimForPlainAndBlock32Types) {
  IsaGuard guard;
  ASSERT_TRUE(set_active_cpu_isa(GetParam()).ok());
  ThreadPool pool(2);
  std::mt19937 rng(99);
  for (DType t : {DType::kF32, DType::kF16, DType::kBF16, DType::kF8_E4M3}) {
    for (int64_t in : {1, 7, 33, 300}) {
      Weights w = make_weights(t, 19, in, false, rng);
      for (int64_t n : {1, 2, 12}) EXPECT_EQ(check(w, n, true, &pool, rng), 0) << dtype_name(t) << " in=" << in;
    }
  }
  for (DType t : {DType::kQ8_0, DType::kQ4_0}) {
    Weights w = make_weights(t, 21, 96, false, rng);
    for (int64_t n : {1, 4, 13}) EXPECT_EQ(check(w, n, false, &pool, rng), 0) << dtype_name(t);
  }
}

TEST_P(GemmAllTypes, Fp8BlockScalesOnPartialBlocks) {
  IsaGuard guard;
  ASSERT_TRUE(set_active_cpu_isa(GetParam()).ok());
  ThreadPool pool(2);
  std::mt19937 rng(7);
  Weights w = make_weights(DType::kF8_E4M3, 200, 300, true, rng);
  ASSERT_EQ(w.scale.size(), 2u * 3u);
  for (int64_t n : {1, 3, 17}) {
    EXPECT_EQ(check(w, n, n != 3, &pool, rng), 0) << "n=" << n;
    EXPECT_EQ(check(w, n, false, nullptr, rng), 0) << "n=" << n;
  }
  Weights exact = make_weights(DType::kF8_E4M3, 128, 256, true, rng);
  EXPECT_EQ(check(exact, 20, true, &pool, rng), 0);
}

TEST_P(GemmAllTypes, NanWeightCodePropagates) {
  IsaGuard guard;
  ASSERT_TRUE(set_active_cpu_isa(GetParam()).ok());
  std::vector<uint8_t> w(2 * 64, 0x38);  // all 1.0
  w[64 + 40] = 0x7F;                     // row 1 has a NaN
  for (int64_t n : {1, 12}) {            // fused and panel paths
    std::vector<float> x(static_cast<size_t>(n * 64), 1.0f), y(static_cast<size_t>(n * 2));
    Status st = dense_gemm({}, TensorView::make(w.data(), DType::kF8_E4M3, {2, 64}),
                           TensorView::make(x.data(), DType::kF32, {n, 64}), nullptr,
                           TensorView::make(y.data(), DType::kF32, {n, 2}));
    ASSERT_TRUE(st.ok()) << st.to_string();
    EXPECT_EQ(y[0], 64.0f) << n;
    EXPECT_TRUE(std::isnan(y[static_cast<size_t>(2 * n - 1)])) << n;
  }
}

// Row r holds finite code r (0x00..0x7E, 0x80..0xFE) in column r % 32 and zeros elsewhere; x is all ones, so
// y[r] must equal the code's table value exactly, through the vector decoders of both paths.
TEST_P(GemmAllTypes, EveryFp8CodeDecodesExactly) {
  IsaGuard guard;
  ASSERT_TRUE(set_active_cpu_isa(GetParam()).ok());
  std::vector<uint8_t> codes;
  for (int c = 0; c < 256; ++c)
    if ((c & 0x7F) != 0x7F) codes.push_back(static_cast<uint8_t>(c));
  int64_t out = static_cast<int64_t>(codes.size()), in = 64;
  std::vector<uint8_t> w(static_cast<size_t>(out * in), 0x00);
  for (int64_t r = 0; r < out; ++r) w[static_cast<size_t>(r * in + r % 32)] = codes[static_cast<size_t>(r)];
  for (int64_t n : {1, 12}) {
    std::vector<float> x(static_cast<size_t>(n * in), 1.0f), y(static_cast<size_t>(n * out));
    ASSERT_TRUE(dense_gemm({}, TensorView::make(w.data(), DType::kF8_E4M3, {out, in}),
                           TensorView::make(x.data(), DType::kF32, {n, in}), nullptr,
                           TensorView::make(y.data(), DType::kF32, {n, out}))
                    .ok());
    for (int64_t r = 0; r < out; ++r)
      EXPECT_EQ(y[static_cast<size_t>((n - 1) * out + r)], fp8_e4m3_to_f32(codes[static_cast<size_t>(r)]))
          << "code " << int(codes[static_cast<size_t>(r)]) << " n=" << n;
  }
}

// The attention loops' block kernels: each dot within float rounding of a double sum (1e-6 of Σ|q·row|) and each
// accumulation within one rounding per row, for lengths around every vector width (8, 16, 32) and past them; and every
// output bit-identical to a call for that output and one row alone (batch invariance of attention).
TEST_P(GemmAllTypes, RowsDotAndAxpyMatchReferenceWhateverTheBlock) {
  const GemmKernels& k = kernels_of(GetParam());
  ASSERT_TRUE(k.rows_dot && k.rows_axpy);
  std::mt19937 rng(77);
  constexpr int kQ = 6, kT = 5;
  for (int64_t n : {1, 7, 8, 9, 17, 31, 32, 33, 64, 80, 128, 200, 576}) {
    const int64_t ld = n + 3;  // rows and queries a few floats apart, as cache rows of several heads are
    const auto q = gaussian(kQ * ld, rng), rows = gaussian(kT * ld, rng), a = gaussian(kQ * kT, rng),
               y0 = gaussian(kQ * ld, rng);
    std::vector<float> dots(kQ * kT);
    k.rows_dot(q.data(), ld, kQ, rows.data(), ld, kT, n, dots.data(), kT);
    // Calls for 1 … 6 outputs (the kernels take 1, 2, 3 and 4 at a time, with column steps that depend on how many).
    std::vector<std::vector<float>> y_of(kQ + 1, y0);
    for (int ny = 1; ny <= kQ; ++ny) k.rows_axpy(a.data(), kT, ny, rows.data(), ld, kT, n, y_of[ny].data(), ld);
    const std::vector<float>& y = y_of[kQ];
    for (int i = 0; i < kQ; ++i) {
      for (int t = 0; t < kT; ++t) {
        double want = 0, mag = 0;
        for (int64_t d = 0; d < n; ++d) {
          want += static_cast<double>(q[i * ld + d]) * rows[t * ld + d];
          mag += std::fabs(static_cast<double>(q[i * ld + d]) * rows[t * ld + d]);
        }
        EXPECT_NEAR(dots[i * kT + t], want, 1e-6 * mag) << "n=" << n;
        float alone;
        k.rows_dot(q.data() + i * ld, ld, 1, rows.data() + t * ld, ld, 1, n, &alone, 1);
        EXPECT_EQ(alone, dots[i * kT + t]) << "n=" << n << " query " << i << " row " << t;
      }
      std::vector<float> one_by_one(y0.begin() + i * ld, y0.begin() + i * ld + n);
      for (int t = 0; t < kT; ++t)
        k.rows_axpy(a.data() + i * kT + t, 1, 1, rows.data() + t * ld, ld, 1, n, one_by_one.data(), n);
      for (int64_t d = 0; d < n; ++d) {
        double want = y0[i * ld + d], mag = std::fabs(want);
        for (int t = 0; t < kT; ++t) {
          want += static_cast<double>(a[i * kT + t]) * rows[t * ld + d];
          mag += std::fabs(static_cast<double>(a[i * kT + t]) * rows[t * ld + d]);
        }
        EXPECT_NEAR(y[i * ld + d], want, 1e-6 * kT * mag) << "n=" << n;
        for (int ny = i + 1; ny <= kQ; ++ny)
          EXPECT_EQ(y_of[ny][i * ld + d], one_by_one[d])
              << "n=" << n << " of " << ny << " output " << i << " column " << d;
      }
    }
  }
}

// The elementwise loops at every ISA's width give the scalar table's bits for every length around the vector widths
// (the vector body and the scalar tail). SwiGLU: within 1e-6 relative of silu in double, and exact at the edges: 0
// stays 0, a gate far below zero gives 0, far above it gate · up, NaN stays NaN.
TEST_P(GemmAllTypes, SiluMulGivesTheScalarBits) {
  const GemmKernels& k = kernels_of(GetParam());
  ASSERT_NE(k.silu_mul, nullptr);
  std::mt19937 rng(31);
  for (int64_t n : {1, 7, 8, 15, 16, 17, 33, 100, 1000}) {
    auto gate = gaussian(n, rng), up = gaussian(n, rng);
    for (int64_t i = 0; i < n; ++i) gate[i] *= 6.0f;
    std::vector<float> got(n), want(n);
    k.silu_mul(gate.data(), up.data(), got.data(), n);
    gemm_kernels_scalar().silu_mul(gate.data(), up.data(), want.data(), n);
    for (int64_t i = 0; i < n; ++i) {
      EXPECT_EQ(std::bit_cast<uint32_t>(got[i]), std::bit_cast<uint32_t>(want[i])) << "n=" << n << " i=" << i;
      const double g = gate[i], silu = g / (1.0 + std::exp(-g)) * up[i];
      EXPECT_NEAR(got[i], silu, 1e-6 * std::fabs(silu) + 1e-30) << "n=" << n << " i=" << i;
    }
  }
  const std::vector<float> gate = {0.0f, -200.0f, 200.0f, std::nanf(""), 3.0f}, up = {5.0f, 2.0f, 0.5f, 1.0f, 0.0f};
  std::vector<float> out(gate.size());
  k.silu_mul(gate.data(), up.data(), out.data(), static_cast<int64_t>(gate.size()));
  EXPECT_EQ(out[0], 0.0f);
  EXPECT_EQ(out[1], 0.0f);
  EXPECT_EQ(out[2], 100.0f);
  EXPECT_TRUE(std::isnan(out[3]));
  EXPECT_EQ(out[4], 0.0f);
}

// Softmax: within 1e-6 relative of the double softmax, summing to 1, with the largest value found wherever it lies
// (past the last whole 16 values too); a NaN in the row makes the whole row NaN, as the one-chain loop before did.
TEST_P(GemmAllTypes, SoftmaxRowGivesTheScalarBits) {
  const GemmKernels& k = kernels_of(GetParam());
  ASSERT_NE(k.softmax_row, nullptr);
  std::mt19937 rng(41);
  for (int64_t n : {1, 3, 15, 16, 17, 40, 129, 512}) {
    auto x = gaussian(n, rng, 4.0f);
    x[static_cast<size_t>(n - 1)] = 30.0f;  // the maximum in the tail
    std::vector<float> got = x, want = x;
    k.softmax_row(got.data(), n);
    gemm_kernels_scalar().softmax_row(want.data(), n);
    double z = 0, sum = 0;
    for (float v : x) z += std::exp(static_cast<double>(v) - 30.0);
    for (int64_t i = 0; i < n; ++i) {
      EXPECT_EQ(std::bit_cast<uint32_t>(got[i]), std::bit_cast<uint32_t>(want[i])) << "n=" << n << " i=" << i;
      const double p = std::exp(static_cast<double>(x[i]) - 30.0) / z;
      EXPECT_NEAR(got[i], p, 1e-6 * p + 1e-12) << "n=" << n << " i=" << i;
      sum += got[i];
    }
    EXPECT_NEAR(sum, 1.0, 1e-6) << "n=" << n;
  }
  std::vector<float> x = {1.0f, std::nanf(""), 0.0f, 1.0f};
  k.softmax_row(x.data(), 4);
  EXPECT_TRUE(std::isnan(x[1]));
  EXPECT_TRUE(std::isnan(x[0]));  // the NaN's exp joins the sum, as in the one-chain loop before
}

#if defined(__x86_64__)
// The 512-bit attention block kernels only widen the 256-bit ones (two 8-lane chains per register, tiles of queries ×
// rows): every output has the AVX2 kernels' bits, for every tile edge (1 … 6 queries, 1 … 7 rows) and length.
TEST(GemmRowsKernels, Avx512GivesTheAvx2Bits) {
  if (!cpu_isa_available(CpuIsa::kAvx512)) GTEST_SKIP() << "no AVX-512 on this CPU";
  const GemmKernels &wide = gemm_kernels_avx512(), &narrow = gemm_kernels_avx2();
  std::mt19937 rng(5);
  for (int64_t n : {7, 16, 40, 64, 100, 512, 576}) {
    const int64_t ld = n + 5;
    for (int nq = 1; nq <= 6; ++nq)
      for (int nt = 1; nt <= 7; ++nt) {
        const auto q = gaussian(nq * ld, rng), rows = gaussian(nt * ld, rng), a = gaussian(nq * nt, rng),
                   y0 = gaussian(nq * ld, rng);
        std::vector<float> dots_wide(nq * nt), dots_narrow(nq * nt);
        wide.rows_dot(q.data(), ld, nq, rows.data(), ld, nt, n, dots_wide.data(), nt);
        narrow.rows_dot(q.data(), ld, nq, rows.data(), ld, nt, n, dots_narrow.data(), nt);
        EXPECT_EQ(dots_wide, dots_narrow) << "n=" << n << " queries " << nq << " rows " << nt;
        std::vector<float> y_wide = y0, y_narrow = y0;
        wide.rows_axpy(a.data(), nt, nq, rows.data(), ld, nt, n, y_wide.data(), ld);
        narrow.rows_axpy(a.data(), nt, nq, rows.data(), ld, nt, n, y_narrow.data(), ld);
        EXPECT_EQ(y_wide, y_narrow) << "n=" << n << " outputs " << nq << " rows " << nt;
      }
  }
}
#endif

INSTANTIATE_TEST_SUITE_P(Isa, GemmAllTypes, ::testing::ValuesIn(available_isas()),
                         [](const auto& info) { return std::string(cpu_isa_name(info.param)); });

TEST(Gemm, RejectsBadInput) {
  std::vector<float> buf(4096, 0.0f);
  std::vector<int32_t> ibuf(64, 0);
  auto f32 = [&](std::initializer_list<int64_t> d) { return TensorView::make(buf.data(), DType::kF32, d); };
  TensorView w = f32({8, 32}), x = f32({2, 32}), y = f32({2, 8}), b = f32({8});
  EXPECT_TRUE(dense_gemm({}, w, x, &b, y).ok());
  EXPECT_EQ(dense_gemm({}, f32({8, 32, 1}), x, nullptr, y).code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(dense_gemm({}, w, f32({2, 16}), nullptr, y).code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(dense_gemm({}, w, x, nullptr, f32({2, 9})).code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(dense_gemm({}, w, x, nullptr, f32({3, 8})).code(), StatusCode::kInvalidArgument);
  TensorView b9 = f32({9});
  EXPECT_EQ(dense_gemm({}, w, x, &b9, y).code(), StatusCode::kInvalidArgument);
  TensorView wi = TensorView::make(ibuf.data(), DType::kI32, {2, 32});
  Status st = dense_gemm({}, wi, x, nullptr, f32({2, 2}));
  EXPECT_EQ(st.code(), StatusCode::kUnsupported);
  EXPECT_NE(st.message().find("i32"), std::string::npos);
  TensorView wq = TensorView::make(buf.data(), DType::kQ8_0, {8, 48});
  st = dense_gemm({}, wq, f32({2, 48}), nullptr, y);
  EXPECT_EQ(st.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(st.message().find("q8_0"), std::string::npos);
  TensorView ws = w;
  ws.scale = buf.data();
  EXPECT_EQ(dense_gemm({}, ws, x, nullptr, y).code(), StatusCode::kInvalidArgument);
  TensorView xh = TensorView::make(buf.data(), DType::kF16, {2, 32});
  EXPECT_EQ(dense_gemm({}, w, xh, nullptr, y).code(), StatusCode::kUnsupported);
  TensorView wnull = TensorView::make(nullptr, DType::kF32, {8, 32});
  EXPECT_EQ(dense_gemm({}, wnull, x, nullptr, y).code(), StatusCode::kInvalidArgument);
}

TEST(Gemm, EmptyBatchAndEmptyInnerDim) {
  std::vector<float> bias = {1.5f, -2.0f}, y(6, NAN);
  TensorView w = TensorView::make(nullptr, DType::kF32, {2, 0});
  TensorView x = TensorView::make(nullptr, DType::kF32, {3, 0});
  TensorView b = TensorView::make(bias.data(), DType::kF32, {2});
  ASSERT_TRUE(dense_gemm({}, w, x, &b, TensorView::make(y.data(), DType::kF32, {3, 2})).ok());
  EXPECT_EQ(y, (std::vector<float>{1.5f, -2.0f, 1.5f, -2.0f, 1.5f, -2.0f}));
  TensorView w2 = TensorView::make(y.data(), DType::kF32, {2, 3});
  TensorView x0 = TensorView::make(nullptr, DType::kF32, {0, 3});
  EXPECT_TRUE(dense_gemm({}, w2, x0, nullptr, TensorView::make(nullptr, DType::kF32, {0, 2})).ok());
}

TEST(CpuFeatures, NamesAndOverride) {
  EXPECT_EQ(cpu_isa_from_name("avx2"), CpuIsa::kAvx2);
  EXPECT_EQ(cpu_isa_from_name("avx512"), CpuIsa::kAvx512);
  EXPECT_EQ(cpu_isa_from_name("scalar"), CpuIsa::kScalar);
  EXPECT_EQ(cpu_isa_from_name("neon"), CpuIsa::kNeon);
  EXPECT_EQ(cpu_isa_from_name("dotprod"), CpuIsa::kDotprod);
  EXPECT_EQ(cpu_isa_from_name("i8mm"), CpuIsa::kI8mm);
  EXPECT_EQ(cpu_isa_from_name("sve"), CpuIsa::kSve);
  EXPECT_FALSE(cpu_isa_from_name("sse2").has_value());
  IsaGuard guard;
  EXPECT_TRUE(set_active_cpu_isa(CpuIsa::kScalar).ok());
  EXPECT_EQ(active_cpu_isa(), CpuIsa::kScalar);
  // Another architecture's families are never available; this one's up to the best.
  const std::vector<CpuIsa> mine = cpu_isas_of_this_architecture();
  for (CpuIsa isa : {CpuIsa::kAvx2, CpuIsa::kAvx512, CpuIsa::kNeon, CpuIsa::kDotprod, CpuIsa::kI8mm, CpuIsa::kSve}) {
    const bool here = std::find(mine.begin(), mine.end(), isa) != mine.end();
    if (!here || !cpu_isa_available(isa)) {
      EXPECT_EQ(set_active_cpu_isa(isa).code(), StatusCode::kUnsupported) << cpu_isa_name(isa);
    }
    if (!here) {
      EXPECT_FALSE(cpu_isa_available(isa)) << cpu_isa_name(isa);
    }
  }
  EXPECT_TRUE(cpu_isa_available(best_cpu_isa()));
}

}  // namespace
}  // namespace cai::hal::cpu
