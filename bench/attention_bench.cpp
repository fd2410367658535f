// Google Benchmark for the CPU attention_gqa kernel at decode: one query token per sequence over a paged KV cache
// (16-position blocks in shuffled slots, as the scheduler hands them out), Qwen2-1.5B's heads (12 query heads, 2 KV
// heads, 128 wide). bytes_per_second counts the K and V rows read, so the number compares with the memory bandwidth
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

// args: context length, sequences, threads (0 = the pool's all), cache dtype.
void BM_attention_decode(benchmark::State& state) {
  const int n_ctx = static_cast<int>(state.range(0)), n_seqs = static_cast<int>(state.range(1));
  const bool threaded = state.range(2) == 0;
  const DType kv = static_cast<DType>(state.range(3));
  const int blocks_per_seq = (n_ctx + kBlock - 1) / kBlock;
  const int64_t n_slots = static_cast<int64_t>(blocks_per_seq) * n_seqs * kBlock;
  const int64_t width = static_cast<int64_t>(kKvHeads) * kHeadDim;

  std::mt19937 rng(7);
  std::normal_distribution<float> dist(0.0f, 1.0f);
  std::vector<float> row(static_cast<size_t>(width));
  const size_t rb = cai::row_bytes(kv, width);
  // The caches as the CPU device allocates a KV cache (2 MiB-aligned on transparent huge pages).
  cai::hal::Device* cpu = cai::hal::Registry::global().find_device("cpu").value();
  const size_t cache_bytes = rb * static_cast<size_t>(n_slots);
  auto k_cache = cpu->allocate(cache_bytes), v_cache = cpu->allocate(cache_bytes);
  if (!k_cache.ok() || !v_cache.ok()) return state.SkipWithError("cannot allocate the caches");
  for (cai::hal::Buffer* cache : {&*k_cache, &*v_cache})
    for (int64_t s = 0; s < n_slots; ++s) {
      for (float& x : row) x = dist(rng);
      if (!cai::quantize_row(kv, row.data(), static_cast<uint8_t*>(cache->data()) + static_cast<size_t>(s) * rb, width)
               .ok())
        state.SkipWithError("no quantizer for the cache dtype");
    }
  std::vector<int32_t> tables(static_cast<size_t>(blocks_per_seq) * n_seqs);
  std::iota(tables.begin(), tables.end(), 0);
  std::shuffle(tables.begin(), tables.end(), rng);
  std::vector<int32_t> seqs;
  for (int s = 0; s < n_seqs; ++s) seqs.insert(seqs.end(), {s, 1, n_ctx - 1});
  std::vector<float> q(static_cast<size_t>(n_seqs) * kHeads * kHeadDim), out(q.size());
  for (float& x : q) x = dist(rng);

  cai::hal::AttnBatch batch;
  batch.seqs = TensorView::make(seqs.data(), DType::kI32, {n_seqs, 3});
  batch.block_tables = TensorView::make(tables.data(), DType::kI32, {n_seqs, blocks_per_seq});
  batch.max_q = 1;
  batch.max_ctx = n_ctx;
  const cai::hal::AttentionParams p{kHeads, kKvHeads, kHeadDim, kHeadDim, 0.088f, kBlock};
  cai::hal::OpContext ctx;
  ctx.pool = threaded ? &bench_pool() : nullptr;
  ctx.batch_invariant = true;
  const TensorView qv = TensorView::make(q.data(), DType::kF32, {n_seqs, kHeads, kHeadDim});
  const TensorView ov = TensorView::make(out.data(), DType::kF32, {n_seqs, kHeads, kHeadDim});
  const TensorView kc = TensorView::make(k_cache->data(), kv, {n_slots, kKvHeads, kHeadDim});
  const TensorView vc = TensorView::make(v_cache->data(), kv, {n_slots, kKvHeads, kHeadDim});
  for (auto _ : state) {
    if (!cai::hal::cpu::attention_gqa(ctx, p, batch, qv, kc, vc, ov).ok()) state.SkipWithError("attention failed");
    benchmark::DoNotOptimize(out.data());
  }
  const int64_t bytes_read = 2 * static_cast<int64_t>(n_seqs) * n_ctx * static_cast<int64_t>(rb);
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

}  // namespace
