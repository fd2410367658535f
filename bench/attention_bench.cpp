// Google Benchmark for the CPU attention kernels at decode: one query token per sequence over a paged KV cache
// (16-position blocks in shuffled slots, as the scheduler hands them out). attention_gqa with Qwen2-1.5B's heads (12
// query heads, 2 KV heads, 128 wide); absorbed attention_mla with DeepSeek-V2-Lite's (16 heads, latent 512 + rope 64,
// nope and v 128, Q8_0 W_UK / W_UV; --precision fast, so BF16 products where the CPU has them). bytes_per_second
// counts the cache rows read (K and V, or the latent rows once), so the number compares with the memory bandwidth
// (`cai-membw`): at long contexts decode attention is a stream over the cache and should run at that rate.
#include <benchmark/benchmark.h>

#include <algorithm>
#include <numeric>
#include <random>
#include <string>
#include <vector>

#include "bench_pool.h"
#include "core/quant.h"
#include "hal/cpu/kernels/kernels.h"
#include "hal/hal.h"

namespace {

using cai::DType;
using cai::TensorView;

constexpr int kHeads = 12, kKvHeads = 2, kHeadDim = 128, kBlock = 16;

std::mt19937& rng() {
  static std::mt19937 r(7);
  return r;
}

std::vector<float> random_floats(size_t n) {
  std::normal_distribution<float> dist(0.0f, 1.0f);
  std::vector<float> v(n);
  for (float& x : v) x = dist(rng());
  return v;
}

// n_slots rows of `width` random values in `dtype`, as the CPU device allocates a KV cache (2 MiB-aligned on
// transparent huge pages); an empty buffer when it cannot be made.
cai::Result<cai::hal::Buffer> random_cache(DType dtype, int64_t n_slots, int64_t width) {
  cai::hal::Device* cpu = cai::hal::Registry::global().find_device("cpu").value();
  const size_t rb = cai::row_bytes(dtype, width);
  CAI_ASSIGN_OR_RETURN(cai::hal::Buffer cache, cpu->allocate(rb * static_cast<size_t>(n_slots)));
  for (int64_t s = 0; s < n_slots; ++s)
    CAI_TRY(cai::quantize_row(dtype, random_floats(static_cast<size_t>(width)).data(),
                              static_cast<uint8_t*>(cache.data()) + static_cast<size_t>(s) * rb, width));
  return cache;
}

// The sequences' rows (one query at the last position of n_ctx) and their block tables over shuffled blocks.
struct DecodeBatch {
  std::vector<int32_t> seqs, tables;
  cai::hal::AttnBatch batch;
  int64_t n_slots;
  DecodeBatch(int n_seqs, int n_ctx) {
    const int blocks_per_seq = (n_ctx + kBlock - 1) / kBlock;
    n_slots = static_cast<int64_t>(blocks_per_seq) * n_seqs * kBlock;
    tables.resize(static_cast<size_t>(blocks_per_seq) * n_seqs);
    std::iota(tables.begin(), tables.end(), 0);
    std::shuffle(tables.begin(), tables.end(), rng());
    for (int s = 0; s < n_seqs; ++s) seqs.insert(seqs.end(), {s, 1, n_ctx - 1});
    batch.seqs = TensorView::make(seqs.data(), DType::kI32, {n_seqs, 3});
    batch.block_tables = TensorView::make(tables.data(), DType::kI32, {n_seqs, blocks_per_seq});
    batch.max_q = 1;
    batch.max_ctx = n_ctx;
  }
};

cai::hal::OpContext decode_context(bool threaded) {
  cai::hal::OpContext ctx;
  ctx.pool = threaded ? &bench_pool() : nullptr;
  ctx.batch_invariant = true;
  ctx.precision = cai::hal::Precision::kFast;  // as run / serve / bench default
  return ctx;
}

// args: context length, sequences, threads (0 = the pool's all), cache dtype.
void BM_attention_decode(benchmark::State& state) {
  const int n_ctx = static_cast<int>(state.range(0)), n_seqs = static_cast<int>(state.range(1));
  const DType kv = static_cast<DType>(state.range(3));
  const DecodeBatch db(n_seqs, n_ctx);
  const int64_t width = static_cast<int64_t>(kKvHeads) * kHeadDim;
  auto k_cache = random_cache(kv, db.n_slots, width), v_cache = random_cache(kv, db.n_slots, width);
  if (!k_cache.ok() || !v_cache.ok()) return state.SkipWithError("cannot make the caches");
  std::vector<float> q = random_floats(static_cast<size_t>(n_seqs) * kHeads * kHeadDim), out(q.size());
  const cai::hal::AttentionParams p{kHeads, kKvHeads, kHeadDim, kHeadDim, 0.088f, kBlock};
  const cai::hal::OpContext ctx = decode_context(state.range(2) == 0);
  const TensorView qv = TensorView::make(q.data(), DType::kF32, {n_seqs, kHeads, kHeadDim});
  const TensorView ov = TensorView::make(out.data(), DType::kF32, {n_seqs, kHeads, kHeadDim});
  const TensorView kc = TensorView::make(k_cache->data(), kv, {db.n_slots, kKvHeads, kHeadDim});
  const TensorView vc = TensorView::make(v_cache->data(), kv, {db.n_slots, kKvHeads, kHeadDim});
  for (auto _ : state) {
    if (!cai::hal::cpu::attention_gqa(ctx, p, db.batch, qv, kc, vc, ov).ok()) state.SkipWithError("attention failed");
    benchmark::DoNotOptimize(out.data());
  }
  const int64_t bytes_read = 2 * static_cast<int64_t>(n_seqs) * n_ctx * static_cast<int64_t>(cai::row_bytes(kv, width));
  state.SetBytesProcessed(state.iterations() * bytes_read);
  state.SetLabel(std::string(cai::dtype_name(kv)));
}

constexpr int kMlaHeads = 16, kKvLora = 512, kRope = 64, kNope = 128, kVHead = 128;

// A weight of random values quantized to Q8_0.
std::vector<uint8_t> random_q8_0(int64_t rows, int64_t cols) {
  const size_t rb = cai::row_bytes(DType::kQ8_0, cols);
  std::vector<uint8_t> w(rb * static_cast<size_t>(rows));
  for (int64_t r = 0; r < rows; ++r)
    if (!cai::quantize_row(DType::kQ8_0, random_floats(static_cast<size_t>(cols)).data(), w.data() + r * rb, cols).ok())
      w.clear();
  return w;
}

// args as BM_attention_decode's; the latent cache is one row of kv_lora + rope values a position.
void BM_attention_mla_decode(benchmark::State& state) {
  const int n_ctx = static_cast<int>(state.range(0)), n_seqs = static_cast<int>(state.range(1));
  const DType kv = static_cast<DType>(state.range(3));
  const DecodeBatch db(n_seqs, n_ctx);
  auto latent = random_cache(kv, db.n_slots, kKvLora + kRope);
  std::vector<uint8_t> w_uk = random_q8_0(int64_t{kMlaHeads} * kKvLora, kNope),
                       w_uv = random_q8_0(int64_t{kMlaHeads} * kVHead, kKvLora);
  if (!latent.ok() || w_uk.empty() || w_uv.empty()) return state.SkipWithError("cannot make the cache and weights");
  std::vector<float> q = random_floats(static_cast<size_t>(n_seqs) * kMlaHeads * (kNope + kRope)),
                     out(static_cast<size_t>(n_seqs) * kMlaHeads * kVHead);
  const cai::hal::MlaParams p{kMlaHeads, kNope, kRope, kVHead, kKvLora, 0.072f, kBlock};
  const cai::hal::OpContext ctx = decode_context(state.range(2) == 0);
  const TensorView qv = TensorView::make(q.data(), DType::kF32, {n_seqs, kMlaHeads, kNope + kRope});
  const TensorView ov = TensorView::make(out.data(), DType::kF32, {n_seqs, kMlaHeads, kVHead});
  const TensorView ukv = TensorView::make(w_uk.data(), DType::kQ8_0, {int64_t{kMlaHeads} * kKvLora, kNope});
  const TensorView uvv = TensorView::make(w_uv.data(), DType::kQ8_0, {int64_t{kMlaHeads} * kVHead, kKvLora});
  const TensorView lv = TensorView::make(latent->data(), kv, {db.n_slots, kKvLora + kRope});
  for (auto _ : state) {
    if (!cai::hal::cpu::attention_mla(ctx, p, db.batch, qv, ukv, uvv, lv, ov).ok())
      state.SkipWithError("attention failed");
    benchmark::DoNotOptimize(out.data());
  }
  const int64_t row = static_cast<int64_t>(cai::row_bytes(kv, kKvLora + kRope));
  const int64_t bytes_read = static_cast<int64_t>(n_seqs) * n_ctx * row;
  state.SetBytesProcessed(state.iterations() * bytes_read);
  state.SetLabel(std::string(cai::dtype_name(kv)));
}

void attention_args(benchmark::internal::Benchmark* b) {
  for (DType kv : {DType::kF32, DType::kF16, DType::kBF16})
    for (int threads : {1, 0})
      for (auto [ctx, seqs] : {std::pair{512, 1}, {2048, 1}, {8192, 1}, {512, 16}, {2048, 16}})
        b->Args({ctx, seqs, threads, static_cast<int64_t>(kv)});
  b->ArgNames({"ctx", "seqs", "threads", "kv"})->UseRealTime()->Unit(benchmark::kMicrosecond);
}

BENCHMARK(BM_attention_decode)->Apply(attention_args);
BENCHMARK(BM_attention_mla_decode)->Apply(attention_args);

}  // namespace
