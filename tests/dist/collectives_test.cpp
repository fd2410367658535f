// Every collective across the processes of an MPI job, one device in each (cai-collective-check checks the values on
// each rank): on simt through the plugin's collectives table across processes (the path NCCL and RCCL take), on the
// CPU, whose backend has none, built from MPI transfers. Three ranks, so that an all-to-all has uneven parts.
#include <gtest/gtest.h>

#include <string>

#include "dist/mpi_launch.h"
#include "test_paths.h"

namespace cai {
namespace {

std::string check(const std::string& backend) {
  return test::mpirun(3) + " " + test::binary_path("cai-collective-check") + " " + backend;
}

TEST(Collectives, EveryOneAcrossProcessesThroughTheBackendsLibrary) {
  const test::CommandResult r = test::run_command("CAI_SIMT_DEVICES=3 " + check("simt"));
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  for (const char* rank : {"rank 0:", "rank 1:", "rank 2:"}) {
    const size_t line = r.out.find(rank);
    ASSERT_NE(line, std::string::npos) << r.out;
    const std::string text = r.out.substr(line, r.out.find('\n', line) - line);
    EXPECT_NE(text.find("every collective right over simt collectives (in-plugin, rank order), across processes"),
              std::string::npos)
        << text;
    // What the library moved, by its ring counts: all_gather 3 × 2 parts of 20 bytes, reduce_scatter 3 × 2 × 16,
    // broadcast 2 × 12, all_to_all the parts between different ranks: (2 + 4 + 1 + 5 + 2 + 4) × 4 (no send/recv).
    EXPECT_NE(text.find(" send_recv=0/0 all_reduce=0/0 all_gather=120/1 reduce_scatter=96/1 broadcast=24/1 "
                        "all_to_all=72/1"),
              std::string::npos)
        << text;
  }
}

TEST(Collectives, EveryOneAcrossProcessesThroughMpi) {
  const test::CommandResult r = test::run_command(check("cpu"));
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  for (const char* rank : {"rank 0:", "rank 1:", "rank 2:"}) {
    const size_t line = r.out.find(rank);
    ASSERT_NE(line, std::string::npos) << r.out;
    const std::string text = r.out.substr(line, r.out.find('\n', line) - line);
    EXPECT_NE(text.find("every collective right over MPI all-gather ("), std::string::npos) << text;
    // Built from transfers each process counts where it takes part, and a reduce-scatter from an all-reduce of the
    // whole buffer: 2 (3 - 1) × 48 bytes.
    EXPECT_NE(text.find(" send_recv=0/0 all_reduce=0/0"), std::string::npos) << text;
    EXPECT_NE(text.find(" reduce_scatter=192/1 "), std::string::npos) << text;
  }
}

}  // namespace
}  // namespace cai
