// libFuzzer target: arbitrary bytes as the step a worker rank receives from its leader (dist::decode_step; the first
// byte picks the KV block size). A message that decodes must encode back to the same integers: nothing is dropped,
// and every block table the batch points to lies in the decoded message.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "dist/step_message.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 1) return 0;
  const int block_size = 1 + data[0] % 64;
  std::vector<int32_t> ints((size - 1) / sizeof(int32_t));
  if (!ints.empty()) std::memcpy(ints.data(), data + 1, ints.size() * sizeof(int32_t));
  cai::Result<cai::dist::DecodedStep> step = cai::dist::decode_step(ints, block_size);
  if (!step.ok()) return 0;
  for (const cai::hal::AttnSeq& s : step->batch.seqs) {
    const int64_t used = (int64_t{s.pos0} + s.n_q + block_size - 1) / block_size;
    if (used > 0 &&
        (s.block_table < step->tables.data() || s.block_table + used > step->tables.data() + step->tables.size()))
      std::abort();
  }
  if (cai::dist::encode_step(step->batch, block_size) != ints) std::abort();
  return 0;
}
