// append_sequence: one sequence's rows of a StepBatch (tokens, positions, KV slots through its block table, and its
// attention entry), as the engine, the drafters and the CLI's decoding loops build their steps.
#pragma once

#include <span>

#include "model/model.h"
#include "runtime/kv/kv_cache_manager.h"

namespace cai {

// Appends `tokens` at positions pos0, pos0 + 1, ... of a sequence whose KV blocks are `table` (block_size positions
// each; it must outlive the batch). Returns the sequence's first row in the batch.
inline int32_t append_sequence(StepBatch& b, std::span<const int32_t> tokens, int32_t pos0,
                               std::span<const int32_t> table, int block_size) {
  const int32_t q_begin = static_cast<int32_t>(b.tokens.size());
  const int32_t n = static_cast<int32_t>(tokens.size());
  for (int32_t i = 0; i < n; ++i) {
    b.tokens.push_back(tokens[static_cast<size_t>(i)]);
    b.positions.push_back(pos0 + i);
    b.slots.push_back(static_cast<int32_t>(kv_slot(table, block_size, pos0 + i)));
  }
  b.seqs.push_back({q_begin, n, pos0, table.data()});
  return q_begin;
}

}  // namespace cai
