// SingleSequence: one sequence with its own KV cache, stepped token by token (CLI run/eval/bench).
#pragma once

#include <span>
#include <vector>

#include "model/model.h"

namespace cai {

class SingleSequence {
 public:
  static Result<SingleSequence> create(Model& model, int n_ctx, int block_size = 16);

  // Computes `tokens` at positions n_past .. n_past+len-1 in one forward step. Returns logits of every row
  // ([len, vocab]) when all_logits, else of the last row only ([vocab]).
  Result<std::vector<float>> step(std::span<const int32_t> tokens, bool all_logits);
  int n_past() const { return n_past_; }
  int n_ctx() const { return n_ctx_; }
  const KvCache& kv() const { return kv_; }

 private:
  SingleSequence(Model& model, KvCache kv, int n_ctx) : model_(&model), kv_(std::move(kv)), n_ctx_(n_ctx) {}

  Model* model_;
  KvCache kv_;
  std::vector<int32_t> block_table_;
  int n_ctx_ = 0;
  int n_past_ = 0;
};

}  // namespace cai
