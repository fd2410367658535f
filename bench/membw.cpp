// cai-membw: this machine's memory read bandwidth (the roofline denominator), all threads and one thread.
#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include <thread>

#include "core/membw.h"
#include "core/thread_pool.h"

int main(int argc, char** argv) {
  CLI::App app{"cai-membw: memory read bandwidth (streaming sum over a buffer far larger than the LLC)"};
  size_t buffer_mib = 1024;
  int n_threads = 0, n_runs = 5;
  bool json = false;
  app.add_option("--size-mib", buffer_mib, "buffer size in MiB")->check(CLI::PositiveNumber);
  app.add_option("--threads", n_threads, "threads (0 = all)")->check(CLI::NonNegativeNumber);
  app.add_option("--runs", n_runs, "runs; the best is reported")->check(CLI::PositiveNumber);
  app.add_flag("--json", json, "print one JSON line");
  CLI11_PARSE(app, argc, argv);
  cai::ThreadPool pool(n_threads);
  const size_t bytes = buffer_mib << 20;
  const double all = cai::measure_read_bandwidth_gbps(&pool, bytes, n_runs);
  const double one = cai::measure_read_bandwidth_gbps(nullptr, bytes, n_runs);
  if (json)
    fmt::print("{{\"read_gbps\": {:.2f}, \"read_gbps_1t\": {:.2f}, \"threads\": {}, \"buffer_mib\": {}}}\n", all, one,
               pool.size(), buffer_mib);
  else
    fmt::print("read bandwidth: {:.2f} GB/s with {} threads, {:.2f} GB/s with 1 thread ({} MiB buffer)\n", all,
               pool.size(), one, buffer_mib);
  return 0;
}
