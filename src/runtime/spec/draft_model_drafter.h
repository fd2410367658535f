// DraftModelDrafter: drafts with a smaller model of the same vocabulary (R1-Distill-Qwen-1.5B for -7B/-14B/-32B),
// over a KV cache of its own at the main cache's block tables. After each step it computes the positions the main
// model just computed and the sequence's last token, whose logits give the first draft token; each further token is
// one more single-position step of the draft model.
#pragma once

#include <memory>

#include "model/kv_cache.h"
#include "model/model.h"
#include "runtime/spec/drafter.h"

namespace cai {

class DraftModelDrafter final : public Drafter {
 public:
  // For a target model of `target_vocab` tokens and a main cache of n_blocks blocks of block_size positions; the
  // draft model must have the same vocabulary size (invalid_argument naming both otherwise).
  static Result<std::unique_ptr<DraftModelDrafter>> create(Model& draft, int target_vocab, int n_blocks,
                                                           int block_size);
  bool needs_hidden() const override { return false; }
  Result<std::vector<std::vector<int32_t>>> draft(std::span<const DraftSeq> seqs, const float* hidden) override;

 private:
  DraftModelDrafter(Model& model, KvCache kv) : model_(model), kv_(std::move(kv)) {}

  Model& model_;
  KvCache kv_;
  std::vector<float> logits_;  // host staging, reused
};

}  // namespace cai
