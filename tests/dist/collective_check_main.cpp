// cai-collective-check: one rank of an MPI job that runs every collective of hal::Communicator over one device per
// process (`mpirun -np N cai-collective-check simt|cpu`) and checks the values each process ends with. The test
// launching it (tests/dist/collectives_test.cpp) reads its one line per rank; exit status 1 on any wrong value.
#include <algorithm>
#include <cstdio>
#include <string>
#include <vector>

#include "hal/collective.h"
#include "hal/hal.h"
#include "hal/process_group.h"
#include "hal/remote_device.h"

namespace cai {
namespace {

struct Job {
  hal::ProcessGroup* group = nullptr;
  std::vector<hal::Device*> devices;  // one per process, by rank
  std::unique_ptr<hal::Communicator> comm;
  int rank = 0, k = 0;
};

hal::Device& mine(const Job& j) { return *j.devices[static_cast<size_t>(j.rank)]; }

// A buffer of n floats on every device (address space only on other processes'); this process's set to `values`.
Result<std::vector<hal::Buffer>> buffers(const Job& j, const std::vector<float>& values) {
  std::vector<hal::Buffer> out;
  for (hal::Device* d : j.devices) {
    CAI_ASSIGN_OR_RETURN(hal::Buffer b, d->allocate(values.size() * sizeof(float)));
    out.push_back(std::move(b));
  }
  CAI_TRY(mine(j).default_stream().copy_to_device(out[static_cast<size_t>(j.rank)].data(), values.data(),
                                                  values.size() * sizeof(float)));
  return out;
}

Result<std::vector<float>> read(const Job& j, const hal::Buffer& b, size_t n) {
  std::vector<float> v(n);
  CAI_TRY(mine(j).default_stream().copy_to_host(v.data(), b.data(), n * sizeof(float)));
  return v;
}

template <class T>
std::vector<T> pointers(std::vector<hal::Buffer>& bufs) {
  std::vector<T> p;
  for (hal::Buffer& b : bufs) p.push_back(static_cast<T>(b.data()));
  return p;
}

Status expect(const char* what, const std::vector<float>& got, const std::vector<float>& want) {
  for (size_t i = 0; i < want.size(); ++i)
    if (got[i] != want[i]) return internal_error("{}: element {} is {}, not {}", what, i, got[i], want[i]);
  return {};
}

// Part p of every rank's buffer holds rank + 10 p + i / 4, except element 0 of each part: 1e8, -1e8, then 1 for the
// later ranks, so that the order of the additions shows in the bits.
float scatter_value(int rank, int part, int i) {
  if (i == 0) return rank == 0 ? 1e8f : rank == 1 ? -1e8f : 1.0f;
  return static_cast<float>(rank) + 10.0f * static_cast<float>(part) + 0.25f * static_cast<float>(i);
}

Status check_collectives(Job& j) {
  const std::vector<int> ranks = hal::every_rank(*j.group);
  const size_t k = static_cast<size_t>(j.k), me = static_cast<size_t>(j.rank);
  {  // all_gather: 5 values a rank, rank r's own r × 100 + i
    constexpr size_t part = 5;
    std::vector<float> v(k * part, -1.0f), want(k * part);
    for (size_t p = 0; p < k; ++p)
      for (size_t i = 0; i < part; ++i) want[p * part + i] = static_cast<float>(p * 100 + i);
    std::copy_n(want.begin() + static_cast<ptrdiff_t>(me * part), part, v.begin() + static_cast<ptrdiff_t>(me * part));
    CAI_ASSIGN_OR_RETURN(std::vector<hal::Buffer> bufs, buffers(j, v));
    CAI_TRY(j.comm->all_gather(ranks, pointers<void*>(bufs), part * sizeof(float)));
    CAI_ASSIGN_OR_RETURN(const std::vector<float> got, read(j, bufs[me], v.size()));
    CAI_TRY(expect("all_gather", got, want));
  }
  {  // reduce_scatter: this rank's part ends as the rank-order sum of every rank's
    constexpr int n = 4;
    std::vector<float> v(k * n), want(n);
    for (size_t p = 0; p < k; ++p)
      for (int i = 0; i < n; ++i) v[p * n + static_cast<size_t>(i)] = scatter_value(j.rank, static_cast<int>(p), i);
    for (int i = 0; i < n; ++i) {
      want[static_cast<size_t>(i)] = scatter_value(0, j.rank, i);
      for (int r = 1; r < j.k; ++r) want[static_cast<size_t>(i)] += scatter_value(r, j.rank, i);
    }
    CAI_ASSIGN_OR_RETURN(std::vector<hal::Buffer> bufs, buffers(j, v));
    CAI_TRY(j.comm->reduce_scatter_sum(ranks, pointers<float*>(bufs), n));
    CAI_ASSIGN_OR_RETURN(std::vector<float> got, read(j, bufs[me], v.size()));
    got.erase(got.begin(), got.begin() + static_cast<ptrdiff_t>(me * n));
    CAI_TRY(expect("reduce_scatter_sum", got, want));
  }
  {  // broadcast from the last rank
    const std::vector<float> root = {42.0f, -1.5f, 3e-3f};
    const bool is_root = me == k - 1;
    CAI_ASSIGN_OR_RETURN(std::vector<hal::Buffer> bufs, buffers(j, is_root ? root : std::vector<float>(3, 0.0f)));
    CAI_TRY(j.comm->broadcast(ranks, pointers<void*>(bufs), root.size() * sizeof(float), j.k - 1));
    CAI_ASSIGN_OR_RETURN(const std::vector<float> got, read(j, bufs[me], root.size()));
    CAI_TRY(expect("broadcast", got, root));
  }
  {  // all_to_all: rank i sends rank j i + 2 j values, i × 1000 + j × 10 + t
    std::vector<uint64_t> bytes(k * k);
    const auto count = [](size_t i, size_t jj) { return i + 2 * jj; };
    for (size_t i = 0; i < k; ++i)
      for (size_t jj = 0; jj < k; ++jj) bytes[i * k + jj] = count(i, jj) * sizeof(float);
    std::vector<float> send, want;
    for (size_t jj = 0; jj < k; ++jj)
      for (size_t t = 0; t < count(me, jj); ++t) send.push_back(static_cast<float>(me * 1000 + jj * 10 + t));
    for (size_t i = 0; i < k; ++i)
      for (size_t t = 0; t < count(i, me); ++t) want.push_back(static_cast<float>(i * 1000 + me * 10 + t));
    size_t widest = 0;  // every buffer as large as the largest row or column, so that each rank's fits
    for (size_t a = 0; a < k; ++a) {
      size_t row = 0, column = 0;
      for (size_t b = 0; b < k; ++b) row += count(a, b), column += count(b, a);
      widest = std::max({widest, row, column});
    }
    send.resize(widest, -1.0f);
    CAI_ASSIGN_OR_RETURN(std::vector<hal::Buffer> out, buffers(j, send));
    CAI_ASSIGN_OR_RETURN(std::vector<hal::Buffer> in, buffers(j, std::vector<float>(widest, -1.0f)));
    CAI_TRY(j.comm->all_to_all(ranks, pointers<const void*>(out), pointers<void*>(in), bytes));
    CAI_ASSIGN_OR_RETURN(const std::vector<float> got, read(j, in[me], want.size()));
    CAI_TRY(expect("all_to_all", got, want));
  }
  return {};
}

Status run(int argc, char** argv) {
  Job j;
  CAI_ASSIGN_OR_RETURN(j.group, hal::join_process_group(&argc, &argv));
  if (!j.group || argc != 2) return invalid_argument("usage: mpirun -np N cai-collective-check simt|cpu");
  j.rank = j.group->rank();
  j.k = j.group->size();
  hal::Registry& registry = hal::Registry::global();
  registry.load_plugins_from_default_paths();
  const std::string backend = argv[1];
  const std::string spec = backend == "cpu" ? "cpu" : backend + ":" + std::to_string(j.group->local_rank());
  CAI_ASSIGN_OR_RETURN(hal::Device * local, registry.find_device(spec));
  CAI_ASSIGN_OR_RETURN(j.devices, hal::job_devices(*j.group, {local}, 60.0));
  CAI_ASSIGN_OR_RETURN(j.comm, hal::make_communicator(j.devices));
  CAI_TRY(check_collectives(j));
  std::string moved;
  for (int c = 0; c < static_cast<int>(hal::Collective::kCount); ++c) {
    const auto kind = static_cast<hal::Collective>(c);
    moved += fmt::format(" {}={}/{}", hal::collective_name(kind), j.comm->bytes_moved(kind), j.comm->n_calls(kind));
  }
  std::printf("rank %d: every collective right over %s;%s\n", j.rank,
              j.comm->all_reduce_path(hal::every_rank(*j.group)).c_str(), moved.c_str());
  return {};
}

}  // namespace
}  // namespace cai

int main(int argc, char** argv) {
  const cai::Status st = cai::run(argc, argv);
  if (!st.ok()) std::fprintf(stderr, "cai-collective-check: %s\n", st.to_string().c_str());
  std::fflush(stdout);
  cai::hal::leave_process_group();
  return st.ok() ? 0 : 1;
}
