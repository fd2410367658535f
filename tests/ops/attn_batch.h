// A host AttnBatch for the attention op tests: `seqs` holds {q_begin, n_q, pos0} per sequence and `tables` each
// sequence's blocks_per_seq block ids; both stay the caller's (the batch points into them).
#pragma once

#include <algorithm>
#include <cstdint>
#include <vector>

#include "hal/hal.h"

namespace cai::test {

inline hal::AttnBatch attn_batch(std::vector<int32_t>& seqs, std::vector<int32_t>& tables, int64_t blocks_per_seq) {
  const int64_t n_seqs = static_cast<int64_t>(seqs.size() / 3);
  hal::AttnBatch batch;
  batch.seqs = TensorView::make(seqs.data(), DType::kI32, {n_seqs, 3});
  batch.block_tables = TensorView::make(tables.data(), DType::kI32, {n_seqs, blocks_per_seq});
  for (size_t s = 0; s < seqs.size(); s += 3) {
    batch.max_q = std::max(batch.max_q, seqs[s + 1]);
    batch.max_ctx = std::max(batch.max_ctx, seqs[s + 1] + seqs[s + 2]);
  }
  return batch;
}

}  // namespace cai::test
