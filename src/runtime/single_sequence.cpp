// SingleSequence: builds the StepBatch for one sequence over an identity block table.
#include "runtime/single_sequence.h"

namespace cai {

Result<SingleSequence> SingleSequence::create(Model& model, int n_ctx, int block_size) {
  if (n_ctx <= 0) return invalid_argument("context size must be positive, got {}", n_ctx);
  const int n_blocks = (n_ctx + block_size - 1) / block_size;
  CAI_ASSIGN_OR_RETURN(KvCache kv, KvCache::create(model.device(), model.kv_spec(), n_blocks, block_size));
  SingleSequence s(model, std::move(kv), n_ctx);
  s.block_table_ = identity_block_table(n_blocks);
  return s;
}

Result<std::vector<float>> SingleSequence::step(std::span<const int32_t> tokens, bool all_logits) {
  const int n = static_cast<int>(tokens.size());
  if (n == 0) return invalid_argument("no tokens to compute");
  if (n_past_ + n > n_ctx_)
    return invalid_argument("sequence of {} tokens exceeds the context size {}", n_past_ + n, n_ctx_);
  StepBatch b;
  b.tokens.assign(tokens.begin(), tokens.end());
  for (int i = 0; i < n; ++i) {
    b.positions.push_back(n_past_ + i);
    b.slots.push_back(n_past_ + i);  // identity block table: slot == position
  }
  b.seqs.push_back({0, n, n_past_, block_table_.data()});
  if (all_logits)
    for (int i = 0; i < n; ++i) b.logit_rows.push_back(i);
  else
    b.logit_rows.push_back(n - 1);
  const size_t vocab = static_cast<size_t>(model_->config().vocab_size);
  std::vector<float> logits(b.logit_rows.size() * vocab);
  CAI_TRY(model_->forward(b, kv_, logits.data()));
  n_past_ += n;
  return logits;
}

}  // namespace cai
