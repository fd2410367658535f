// DraftModelDrafter: one batched pass over the step's positions and the last tokens, then one pass per further token.
#include "runtime/spec/draft_model_drafter.h"

#include "runtime/kv/kv_cache_manager.h"
#include "runtime/sampler.h"

namespace cai {

Result<std::unique_ptr<DraftModelDrafter>> DraftModelDrafter::create(Model& draft, int target_vocab, int n_blocks,
                                                                     int block_size) {
  if (draft.config().vocab_size != target_vocab)
    return invalid_argument("--draft-model: its vocabulary has {} tokens, the model's {}: a draft model must share "
                            "the vocabulary", draft.config().vocab_size, target_vocab);
  CAI_ASSIGN_OR_RETURN(KvCache kv, KvCache::create(draft.kv_shards(), draft.kv_spec(), n_blocks, block_size));
  return std::unique_ptr<DraftModelDrafter>(new DraftModelDrafter(draft, std::move(kv)));
}

Result<std::vector<std::vector<int32_t>>> DraftModelDrafter::draft(std::span<const DraftSeq> seqs, const float*) {
  std::vector<std::vector<int32_t>> drafts(seqs.size());
  const size_t vocab = static_cast<size_t>(model_.config().vocab_size);
  const int bs = kv_.block_size();
  auto add_rows = [&](StepBatch& b, const DraftSeq& s, int first, int end, std::span<const int32_t> tokens) {
    const int32_t q_begin = static_cast<int32_t>(b.tokens.size());
    for (int p = first; p < end; ++p) {
      b.tokens.push_back(tokens[static_cast<size_t>(p - first)]);
      b.positions.push_back(p);
      b.slots.push_back(static_cast<int32_t>(kv_slot(s.block_table, bs, p)));
    }
    b.seqs.push_back({q_begin, end - first, first, s.block_table.data()});
    return q_begin + (end - first) - 1;
  };
  // The positions the main model computed this step, and for each sequence that wants a draft its last token too.
  StepBatch b;
  std::vector<size_t> wanting;
  for (size_t i = 0; i < seqs.size(); ++i) {
    const DraftSeq& s = seqs[i];
    const int end = s.max_draft > 0 ? s.n_computed + 1 : s.n_computed;
    if (end <= s.step_start) continue;
    const int32_t last = add_rows(b, s, s.step_start, end, s.tokens.subspan(static_cast<size_t>(s.step_start)));
    if (s.max_draft > 0) {
      b.logit_rows.push_back(last);
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
      const int pos = s.n_computed + k + 1;
      c.logit_rows.push_back(add_rows(c, s, pos, pos + 1, std::span(&drafts[i].back(), 1)));
      next.push_back(i);
    }
    b = std::move(c);
    wanting = std::move(next);
  }
  return drafts;
}

}  // namespace cai
