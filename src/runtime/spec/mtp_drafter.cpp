// MtpDrafter: one batched module pass over the step's positions, then one pass per further draft token.
#include "runtime/spec/mtp_drafter.h"

#include <algorithm>

#include "runtime/sampler.h"
#include "runtime/step_rows.h"

namespace cai {

Result<std::unique_ptr<MtpDrafter>> MtpDrafter::create(Model& model, int n_blocks, int block_size) {
  MtpModule* mtp = model.mtp();
  if (!mtp) return unsupported("--spec mtp: the model was loaded without a multi-token-prediction module");
  CAI_ASSIGN_OR_RETURN(KvCache kv, KvCache::create(mtp->mtp_kv_shards(), mtp->mtp_kv_spec(), n_blocks, block_size));
  return std::unique_ptr<MtpDrafter>(
      new MtpDrafter(*mtp, model.config().vocab_size, model.config().hidden_size, std::move(kv)));
}

Result<std::vector<std::vector<int32_t>>> MtpDrafter::draft(std::span<const DraftSeq> seqs, const float* hidden) {
  std::vector<std::vector<int32_t>> drafts(seqs.size());
  const size_t h = static_cast<size_t>(hidden_), vocab = static_cast<size_t>(vocab_);
  const int bs = kv_.block_size();
  // The step's positions: row p pairs token p+1 with the main hidden state at p.
  StepBatch b;
  rows_hidden_.clear();
  std::vector<size_t> wanting;  // sequences that want a draft, in logit-row order
  for (size_t i = 0; i < seqs.size(); ++i) {
    const DraftSeq& s = seqs[i];
    const int n = s.n_computed - s.step_start;
    if (n <= 0) continue;
    const int32_t q_begin =
        append_sequence(b, s.tokens.subspan(static_cast<size_t>(s.step_start) + 1, static_cast<size_t>(n)),
                        s.step_start, s.block_table, bs);
    const float* rows = hidden + static_cast<size_t>(s.step_row) * h;
    rows_hidden_.insert(rows_hidden_.end(), rows, rows + static_cast<size_t>(n) * h);
    if (s.max_draft > 0) {
      b.logit_rows.push_back(q_begin + n - 1);
      wanting.push_back(i);
    }
  }
  if (b.tokens.empty()) return drafts;
  logits_.resize(b.logit_rows.size() * vocab);
  block_out_.resize(b.logit_rows.size() * h);
  CAI_TRY(mtp_.forward_mtp(b, rows_hidden_.data(), kv_, logits_.data(), block_out_.data()));
  for (size_t r = 0; r < wanting.size(); ++r) drafts[wanting[r]].push_back(argmax({logits_.data() + r * vocab, vocab}));
  // Chained steps: the drafted token at the next position, with the module's own output state.
  for (int k = 1;; ++k) {
    StepBatch c;
    std::vector<size_t> next;
    rows_hidden_.clear();
    for (size_t r = 0; r < wanting.size(); ++r) {
      const DraftSeq& s = seqs[wanting[r]];
      if (s.max_draft <= k) continue;
      c.logit_rows.push_back(
          append_sequence(c, std::span(&drafts[wanting[r]].back(), 1), s.n_computed + k - 1, s.block_table, bs));
      rows_hidden_.insert(rows_hidden_.end(), block_out_.begin() + static_cast<ptrdiff_t>(r * h),
                          block_out_.begin() + static_cast<ptrdiff_t>((r + 1) * h));
      next.push_back(wanting[r]);
    }
    if (c.tokens.empty()) break;
    logits_.resize(c.logit_rows.size() * vocab);
    block_out_.resize(c.logit_rows.size() * h);
    CAI_TRY(mtp_.forward_mtp(c, rows_hidden_.data(), kv_, logits_.data(), block_out_.data()));
    for (size_t r = 0; r < next.size(); ++r) drafts[next[r]].push_back(argmax({logits_.data() + r * vocab, vocab}));
    wanting = std::move(next);
  }
  return drafts;
}

}  // namespace cai
