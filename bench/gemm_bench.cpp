// Google Benchmark for dense_gemm at Qwen2-1.5B shapes: decode (n=1), serving batches in batch-invariant mode
// (n=16 and n=64 both take the tiled path: more than kFusedMaxRows = 8 rows) and prefill with the packed-panel path
// (n=64); weight GB/s and GFLOP/s. The other GGUF types are timed at decode only. Names ending in /fast use
// Precision::kFast (integer activations and dot products); q8_0_r16 / q4_0_r16 / ... are those weights packed into
// interleaved row groups as --precision fast loads them (q8_0_r16_i8: Q8_0 for 8-bit activations, as the MLP's gate and
// up), timed from decode to a 512-row prefill.
#include <benchmark/benchmark.h>
#include <fmt/format.h>

#include <algorithm>
#include <cstring>
#include <random>
#include <vector>

#include "bench_pool.h"
#include "core/quant.h"
#include "hal/hal.h"
#include "hal/cpu/kernels/cpu_features.h"
#include "hal/cpu/kernels/kernels.h"
#include "hal/cpu/kernels/qdot_groups.h"
#include "hal/cpu/kernels/qdot_kernels.h"

namespace {

using cai::DType;
using cai::TensorView;

// Weights are cycled through enough copies to overflow the last-level cache, so decode numbers show DRAM traffic.
constexpr size_t kColdBytes = size_t{640} << 20;

// n_copies × one matrix in one buffer of the CPU device, which the model's packed weights get too: 2 MiB-aligned on
// transparent huge pages. (On a plain vector's 4 KiB pages every 4 KiB of a streamed matrix costs a TLB miss and the
// hardware prefetchers stop at each page: one-row numbers from another regime than decode's; docs/performance.md.)
struct WeightSet {
  cai::hal::Buffer buffer;
  size_t matrix_bytes = 0;
  int n_copies = 0;
  uint8_t* copy(int c) const { return static_cast<uint8_t*>(buffer.data()) + static_cast<size_t>(c) * matrix_bytes; }
};

// Random weights of type t; a packed type (q8_0_r16, ...) is its row-major type quantized, then packed.
WeightSet make_weights(DType packed_or_row_major, int64_t out, int64_t in) {
  const bool packed = cai::group_rows(packed_or_row_major) > 1;
  const DType t = packed ? cai::hal::cpu::row_major_dtype(packed_or_row_major) : packed_or_row_major;
  std::mt19937 rng(42);
  std::normal_distribution<float> dist(0.0f, 1.0f);
  std::vector<float> row(static_cast<size_t>(in));
  WeightSet w;
  size_t rb = cai::row_bytes(t, in);
  w.matrix_bytes = rb * static_cast<size_t>(out);
  w.n_copies = static_cast<int>(std::max<size_t>(1, kColdBytes / w.matrix_bytes));
  cai::hal::Device* cpu = cai::hal::Registry::global().find_device("cpu").value();
  w.buffer = cpu->allocate(w.matrix_bytes * static_cast<size_t>(w.n_copies)).value();
  for (int64_t r = 0; r < out; ++r) {
    for (auto& v : row) v = dist(rng);
    uint8_t* dst = w.copy(0) + static_cast<size_t>(r) * rb;
    if (!cai::quantize_row(t, row.data(), dst, in).ok()) {
      // No quantizer for this type: random bytes decode at the same speed (an f16 scale times a small code is never
      // an f32 subnormal, so no slow path).
      for (size_t i = 0; i < rb; ++i) dst[i] = static_cast<uint8_t>(rng());
    }
  }
  if (packed) {
    const std::vector<uint8_t> row_major(w.copy(0), w.copy(0) + w.matrix_bytes);
    cai::hal::cpu::pack_row_groups(packed_or_row_major, row_major.data(), w.copy(0), out, in, nullptr);
  }
  for (int c = 1; c < w.n_copies; ++c) std::memcpy(w.copy(c), w.copy(0), w.matrix_bytes);
  return w;
}

void bm_gemm(benchmark::State& state, DType t, int64_t out, int64_t in, int64_t n, bool threaded, bool invariant,
             cai::hal::Precision precision) {
  WeightSet w = make_weights(t, out, in);
  std::vector<float> x(static_cast<size_t>(n * in), 0.5f), y(static_cast<size_t>(n * out));
  TensorView xv = TensorView::make(x.data(), DType::kF32, {n, in});
  TensorView yv = TensorView::make(y.data(), DType::kF32, {n, out});
  cai::hal::OpContext ctx{threaded ? &bench_pool() : nullptr, nullptr, invariant};
  ctx.precision = precision;
  int copy = 0;
  for (auto _ : state) {
    TensorView wv = TensorView::make(w.copy(copy), t, {out, in});
    if (!cai::hal::cpu::dense_gemm(ctx, wv, xv, nullptr, yv).ok()) {
      state.SkipWithError("gemm failed");
      break;
    }
    benchmark::DoNotOptimize(y.data());
    copy = (copy + 1) % w.n_copies;
  }
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations()) * static_cast<int64_t>(w.matrix_bytes));
  state.counters["GFLOPS"] = benchmark::Counter(2.0 * static_cast<double>(n * in * out) * state.iterations() / 1e9,
                                                benchmark::Counter::kIsRate);
  state.SetLabel(fmt::format("{} threads, {}", threaded ? bench_pool().size() : 1,
                             cai::hal::cpu::cpu_isa_name(cai::hal::cpu::active_cpu_isa())));
}

// The weight types with integer dot-product kernels on this CPU (Precision::kFast changes nothing for the others).
bool has_fast_path(DType t) {
  const cai::hal::cpu::QDotKernels& k = cai::hal::cpu::active_qdot_kernels();
  return k.dot[static_cast<int>(t)] || k.dot16[static_cast<int>(t)];
}

const bool g_registered = [] {
  const DType types[] = {DType::kF32, DType::kF16, DType::kBF16, DType::kQ8_0, DType::kQ4_K};
  const int64_t outs[] = {1536, 8960};
  for (bool threaded : {true, false})
    for (auto [n, invariant] : {std::pair<int64_t, bool>{1, true}, {16, true}, {64, true}, {64, false}})
      for (DType t : types)
        for (int64_t out : outs) {
          std::string name = fmt::format("gemm/{}/{}x1536/n{}{}/{}", cai::dtype_name(t), out, n,
                                         invariant && n > 1 ? "-invariant" : "", threaded ? "pool" : "t1");
          benchmark::RegisterBenchmark(name.c_str(), bm_gemm, t, out, int64_t{1536}, n, threaded, invariant,
                                       cai::hal::Precision::kExact)
              ->Unit(benchmark::kMicrosecond)
              ->UseRealTime();
          if (has_fast_path(t))
            benchmark::RegisterBenchmark((name + "/fast").c_str(), bm_gemm, t, out, int64_t{1536}, n, threaded,
                                         invariant, cai::hal::Precision::kFast)
                ->Unit(benchmark::kMicrosecond)
                ->UseRealTime();
        }
  for (bool threaded : {true, false})
    for (DType t : {DType::kQ8_0_R16, DType::kQ4_0_R16, DType::kQ2_K_R16, DType::kQ3_K_R16, DType::kQ4_K_R16,
                    DType::kQ5_K_R16, DType::kQ6_K_R16, DType::kIQ4_NL_R16, DType::kIQ4_XS_R16, DType::kQ8_0_R16_I8})
      for (int64_t n : {1, 16, 64, 512})
        for (int64_t out : outs) {
          std::string name =
              fmt::format("gemm/{}/{}x1536/n{}/{}/fast", cai::dtype_name(t), out, n, threaded ? "pool" : "t1");
          benchmark::RegisterBenchmark(name.c_str(), bm_gemm, t, out, int64_t{1536}, n, threaded, true,
                                       cai::hal::Precision::kFast)
              ->Unit(benchmark::kMicrosecond)
              ->UseRealTime();
        }
  const DType other_types[] = {DType::kQ4_0,    DType::kQ5_K,  DType::kQ6_K,    DType::kQ4_1,   DType::kQ5_0,
                               DType::kQ5_1,    DType::kQ2_K,  DType::kQ3_K,    DType::kIQ4_NL, DType::kIQ4_XS,
                               DType::kIQ3_XXS, DType::kIQ3_S, DType::kIQ2_XXS, DType::kIQ2_XS, DType::kIQ2_S,
                               DType::kIQ1_S,   DType::kIQ1_M};
  for (bool threaded : {true, false})
    for (DType t : other_types)
      for (int64_t n : {1, 64}) {
        std::string name = fmt::format("gemm/{}/1536x1536/n{}/{}", cai::dtype_name(t), n, threaded ? "pool" : "t1");
        for (auto precision : {cai::hal::Precision::kExact, cai::hal::Precision::kFast}) {
          if (precision == cai::hal::Precision::kFast && !has_fast_path(t)) continue;
          benchmark::RegisterBenchmark((name + (precision == cai::hal::Precision::kFast ? "/fast" : "")).c_str(),
                                       bm_gemm, t, int64_t{1536}, int64_t{1536}, n, threaded, true, precision)
              ->Unit(benchmark::kMicrosecond)
              ->UseRealTime();
        }
      }
  return true;
}();

}  // namespace
