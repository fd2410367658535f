// How the tests launch `cai` as an MPI job: Debian's Open MPI on this machine's loopback, as root where CI runs as
// root, more ranks than cores allowed, no core binding (ranks share the two cores), shared memory without the
// single-copy mechanism that containers' ptrace rules refuse.
#pragma once

#include <string>

namespace cai::test {

inline std::string mpirun(int ranks) {
  return "OMPI_MCA_btl_vader_single_copy_mechanism=none mpirun --allow-run-as-root --oversubscribe --bind-to none "
         "-np " +
         std::to_string(ranks);
}

}  // namespace cai::test
