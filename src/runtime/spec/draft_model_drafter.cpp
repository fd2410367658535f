// DraftModelDrafter: one batched pass over the step's positions and the last tokens, then one pass per further token.
#include "runtime/spec/draft_model_drafter.h"

#include "runtime/sampler.h"
#include "runtime/step_rows.h"

namespace cai {

Result<std::unique_ptr<DraftModelDrafter>> DraftModelDrafter::create(Model& draft, int target_vocab, int n_blocks,
                                                                     int block_size) {
  if (draft.config().vocab_size != target_vocab)
    return invalid_argument(
        "--draft-model: its vocabulary has {} tokens, the model's {}: a draft model must share "
        "the vocabulary",
        draft.config().vocab_size, target_vocab);
  CAI_ASSIGN_OR_RETURN(KvCache kv, KvCache::create(draft.kv_shards(), draft.kv_spec(), n_blocks, block_size));
  return std::unique_ptr<DraftModelDrafter>(new DraftModelDrafter(draft, std::move(kv)));
}

Result<std::vector<std::vector<int32_t>>> DraftModelDrafter::draft(std::span<const DraftSeq> seqs, const float*) {
  std::vector<std::vector<int32_t>> drafts(seqs.size());
  const size_t vocab = static_cast<size_t>(model_.config().vocab_size);
  const int bs = kv_.block_size();
  // The positions the main model computed this step, and for each sequence that wants a draft its last token too.
  StepBatch b;
  std::vector<size_t> wanting;
  for (size_t i = 0; i < seqs.size(); ++i) {
    const DraftSeq& s = seqs[i];
    const int end = s.max_draft > 0 ? s.n_computed + 1 : s.n_computed;
    if (end <= s.step_start) continue;
    const int n = end - s.step_start;
    const std::span<const int32_t> tokens = s.tokens.subspan(static_cast<size_t>(s.step_start), static_cast<size_t>(n));
    const int32_t q_begin = append_sequence(b, tokens, s.step_start, s.block_table, bs);
    if (s.max_draft > 0) {
      b.logit_rows.push_back(q_begin + n - 1);
      wanting.push_back(i);
    }
  }
  for (int k = 0; !b.tokens.empty(); ++k) {
    logits_.resize(b.logit_rows.size() * vocab);
    CAI_TRY(model_.forward(b, kv_, logits_.data()));
    for (size_t r = 0; r < wanting.size(); ++r)
      drafts[wanting[r]].push_back(argmax({logits_.data() + r * vocab, vocab}));
    // The next token of each sequence that wants more, at the position after its last drafted one.
    StepBatch c;
    std::vector<size_t> next;
    for (size_t i : wanting) {
      const DraftSeq& s = seqs[i];
      if (s.max_draft <= k + 1) continue;
      const int32_t row = append_sequence(c, std::span(&drafts[i].back(), 1), s.n_computed + k + 1, s.block_table, bs);
      c.logit_rows.push_back(row);
      next.push_back(i);
    }
    b = std::move(c);
    wanting = std::move(next);
  }
  return drafts;
}

}  // namespace cai
