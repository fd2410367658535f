// cai-membw: this machine's memory read bandwidth (streaming sum over a buffer far larger than the LLC).
#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "core/thread_pool.h"

namespace {

// The sums depend on every word read; publishing them keeps the compiler from dropping the reads.
volatile uint64_t g_sink;

struct Options {
  size_t buffer_mib = 1024;
  int n_threads = 0;  // 0 = all cores
  int n_runs = 5;
  bool json = false;
};

// Sums n 64-bit words with four independent register accumulators so the loop is load-bound, not add-bound.
uint64_t sum_words(const uint64_t* p, size_t n) {
  uint64_t a0 = 0, a1 = 0, a2 = 0, a3 = 0;
  size_t i = 0;
  for (; i + 4 <= n; i += 4) {
    a0 += p[i];
    a1 += p[i + 1];
    a2 += p[i + 2];
    a3 += p[i + 3];
  }
  for (; i < n; ++i) a0 += p[i];
  return a0 + a1 + a2 + a3;
}

// Best-of-n_runs read bandwidth in GB/s (1e9 bytes/s), each of `pool`'s threads reading its own contiguous slice
// (the slice it first touched, so pages sit on its NUMA node).
double measure(cai::ThreadPool& pool, const uint64_t* words, size_t n_words, int n_runs) {
  const int n_parts = pool.size();
  std::vector<uint64_t> sums(static_cast<size_t>(n_parts));
  double best = 0;
  for (int run = 0; run < n_runs; ++run) {
    const auto t0 = std::chrono::steady_clock::now();
    pool.parallel_for(n_parts, 1, [&](int64_t begin, int64_t end) {
      for (int64_t part = begin; part < end; ++part) {
        const size_t lo = n_words * static_cast<size_t>(part) / static_cast<size_t>(n_parts);
        const size_t hi = n_words * static_cast<size_t>(part + 1) / static_cast<size_t>(n_parts);
        sums[static_cast<size_t>(part)] = sum_words(words + lo, hi - lo);
      }
    });
    const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    best = std::max(best, static_cast<double>(n_words * sizeof(uint64_t)) / secs / 1e9);
  }
  uint64_t total = 0;
  for (uint64_t s : sums) total += s;
  g_sink = total;
  return best;
}

bool parse_args(int argc, char** argv, Options& o) {
  for (int i = 1; i < argc; ++i) {
    const std::string_view a = argv[i];
    auto next_int = [&](long lo, long hi, long& v) {
      if (i + 1 >= argc) return false;
      char* end = nullptr;
      v = std::strtol(argv[++i], &end, 10);
      return *end == '\0' && v >= lo && v <= hi;
    };
    long v = 0;
    if (a == "--json") {
      o.json = true;
    } else if (a == "--size-mib" && next_int(64, 1 << 20, v)) {
      o.buffer_mib = static_cast<size_t>(v);
    } else if (a == "--threads" && next_int(0, 4096, v)) {
      o.n_threads = static_cast<int>(v);
    } else if (a == "--runs" && next_int(1, 1000, v)) {
      o.n_runs = static_cast<int>(v);
    } else {
      return false;
    }
  }
  return true;
}

}  // namespace

int main(int argc, char** argv) {
  Options o;
  if (!parse_args(argc, argv, o)) {
    std::fprintf(stderr,
                 "usage: cai-membw [--json] [--size-mib N (>= 64, default 1024)] [--threads N (0 = all cores)] "
                 "[--runs N (default 5)]\n");
    return 2;
  }
  const size_t n_words = o.buffer_mib * (size_t{1} << 20) / sizeof(uint64_t);
  std::unique_ptr<uint64_t[]> words(new (std::nothrow) uint64_t[n_words]);
  if (!words) {
    std::fprintf(stderr, "cai-membw: cannot allocate %zu MiB\n", o.buffer_mib);
    return 1;
  }
  cai::ThreadPool pool(o.n_threads);
  cai::ThreadPool single(1);
  pool.parallel_for(pool.size(), 1, [&](int64_t begin, int64_t end) {
    const size_t lo = n_words * static_cast<size_t>(begin) / static_cast<size_t>(pool.size());
    const size_t hi = n_words * static_cast<size_t>(end) / static_cast<size_t>(pool.size());
    for (size_t i = lo; i < hi; ++i) words[i] = i;  // first touch by the thread that will read the slice
  });

  const double gbps = measure(pool, words.get(), n_words, o.n_runs);
  const double gbps_1t = measure(single, words.get(), n_words, o.n_runs);
  if (o.json) {
    fmt::print("{{\"read_gbps\": {:.2f}, \"read_gbps_1t\": {:.2f}, \"threads\": {}, \"buffer_mib\": {}}}\n", gbps,
               gbps_1t, pool.size(), o.buffer_mib);
  } else {
    fmt::print("memory read bandwidth over {} MiB, best of {} runs:\n", o.buffer_mib, o.n_runs);
    fmt::print("  {:3d} threads: {:8.2f} GB/s\n", pool.size(), gbps);
    fmt::print("    1 thread : {:8.2f} GB/s\n", gbps_1t);
  }
  return 0;
}
