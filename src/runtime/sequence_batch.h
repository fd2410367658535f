// SequenceBatch: n sequences over one KV cache (each its own run of blocks), stepped together in one forward pass per
// step — the shape of a serving batch without the scheduler (CLI run/eval/bench).
#pragma once

#include <span>
#include <vector>

#include "model/model.h"

namespace cai {

class SequenceBatch {
 public:
  static Result<SequenceBatch> create(Model& model, int n_seqs, int n_ctx, int block_size = 16);

  // Appends per_seq tokens to every sequence (tokens[s·per_seq, (s+1)·per_seq) to sequence s) in one forward step.
  // Returns the logits of every computed row ([n_seqs·per_seq, vocab]) when all_logits, else of each sequence's last
  // row ([n_seqs, vocab]). With `hidden`, also every row's final hidden state ([n_seqs·per_seq, hidden],
  // Model::forward).
  Result<std::vector<float>> step(std::span<const int32_t> tokens, int per_seq, bool all_logits,
                                  std::vector<float>* hidden = nullptr);
  int n_seqs() const { return n_seqs_; }
  int n_past() const { return n_past_; }
  int n_ctx() const { return n_ctx_; }
  const KvCache& kv() const { return kv_; }

 private:
  SequenceBatch(Model& model, KvCache kv, int n_seqs, int n_ctx)
      : model_(&model), kv_(std::move(kv)), n_seqs_(n_seqs), n_ctx_(n_ctx) {}

  Model* model_;
  KvCache kv_;
  std::vector<int32_t> block_table_;  // sequence s owns blocks [s·blocks_per_seq_, (s+1)·blocks_per_seq_)
  int blocks_per_seq_ = 0;
  int n_seqs_ = 0;
  int n_ctx_ = 0;
  int n_past_ = 0;
};

}  // namespace cai
