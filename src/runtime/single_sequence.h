// SingleSequence: one sequence with its own KV cache, stepped token by token (CLI run/eval/bench).
#pragma once

#include <span>
#include <vector>

#include "runtime/sequence_batch.h"

namespace cai {

class SingleSequence {
 public:
  static Result<SingleSequence> create(Model& model, int n_ctx, int block_size = 16) {
    CAI_ASSIGN_OR_RETURN(SequenceBatch b, SequenceBatch::create(model, 1, n_ctx, block_size));
    return SingleSequence(std::move(b));
  }

  // Computes `tokens` at positions n_past .. n_past+len-1 in one forward step. Returns logits of every row
  // ([len, vocab]) when all_logits, else of the last row only ([vocab]); with `hidden`, each row's final hidden state.
  Result<std::vector<float>> step(std::span<const int32_t> tokens, bool all_logits,
                                  std::vector<float>* hidden = nullptr) {
    return batch_.step(tokens, static_cast<int>(tokens.size()), all_logits, hidden);
  }
  int n_past() const { return batch_.n_past(); }
  int n_ctx() const { return batch_.n_ctx(); }
  const KvCache& kv() const { return batch_.kv(); }

 private:
  explicit SingleSequence(SequenceBatch b) : batch_(std::move(b)) {}

  SequenceBatch batch_;
};

}  // namespace cai
