// SequenceBatch: builds one StepBatch for all sequences over an identity block table split into equal runs.
#include "runtime/sequence_batch.h"

namespace cai {

Result<SequenceBatch> SequenceBatch::create(Model& model, int n_seqs, int n_ctx, int block_size) {
  if (n_ctx <= 0) return invalid_argument("context size must be positive, got {}", n_ctx);
  if (n_seqs <= 0) return invalid_argument("sequence count must be positive, got {}", n_seqs);
  const int per_seq = (n_ctx + block_size - 1) / block_size;
  CAI_ASSIGN_OR_RETURN(KvCache kv, KvCache::create(model.kv_shards(), model.kv_spec(), n_seqs * per_seq, block_size));
  SequenceBatch b(model, std::move(kv), n_seqs, n_ctx);
  b.block_table_ = identity_block_table(n_seqs * per_seq);
  b.blocks_per_seq_ = per_seq;
  return b;
}

Result<std::vector<float>> SequenceBatch::step(std::span<const int32_t> tokens, int per_seq, bool all_logits,
                                               std::vector<float>* hidden) {
  if (per_seq <= 0) return invalid_argument("no tokens to compute");
  if (tokens.size() != static_cast<size_t>(per_seq) * static_cast<size_t>(n_seqs_))
    return invalid_argument("{} tokens given for {} sequences of {} each", tokens.size(), n_seqs_, per_seq);
  if (n_past_ + per_seq > n_ctx_)
    return invalid_argument("sequence of {} tokens exceeds the context size {}", n_past_ + per_seq, n_ctx_);
  StepBatch b;
  b.tokens.assign(tokens.begin(), tokens.end());
  const int seq_slots = blocks_per_seq_ * kv_.block_size();
  for (int s = 0; s < n_seqs_; ++s) {
    const int q_begin = s * per_seq;
    for (int i = 0; i < per_seq; ++i) {
      b.positions.push_back(n_past_ + i);
      b.slots.push_back(s * seq_slots + n_past_ + i);  // identity table: a sequence's slots are contiguous
      if (all_logits) b.logit_rows.push_back(q_begin + i);
    }
    if (!all_logits) b.logit_rows.push_back(q_begin + per_seq - 1);
    b.seqs.push_back({q_begin, per_seq, n_past_, block_table_.data() + s * blocks_per_seq_});
  }
  const size_t vocab = static_cast<size_t>(model_->config().vocab_size);
  std::vector<float> logits(b.logit_rows.size() * vocab);
  if (hidden) hidden->resize(b.tokens.size() * static_cast<size_t>(model_->config().hidden_size));
  CAI_TRY(model_->forward(b, kv_, logits.data(), hidden ? hidden->data() : nullptr));
  n_past_ += per_seq;
  return logits;
}

}  // namespace cai
