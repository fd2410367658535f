// Prompt logprobs: batch rows chosen per chunk, scored on the host pool after the forward pass.
#include "runtime/prompt_logprobs.h"

#include <limits>

#include "core/thread_pool.h"
#include "runtime/logprobs.h"

namespace cai {

void add_prompt_logprob_rows(const ScheduledRequest& r, const SchedRequest& sr, int32_t q_begin, RequestState& rs,
                             const Tokenizer& tok, StepBatch& batch, std::vector<PromptLogprobRow>& rows) {
  if (r.start == 0 && rs.next_prompt_logprob() == 0) {
    TokenLogprob first;
    first.token = sr.tokens[0];
    first.text = tok.token_text(first.token);
    first.logprob = std::numeric_limits<float>::quiet_NaN();
    rs.add_prompt_logprob(std::move(first));
  }
  for (int i = 0; i < r.n_new - r.n_draft; ++i) {
    const int target = r.start + i + 1;  // the position row i's logits predict
    if (target >= sr.n_prompt) break;
    if (target < rs.next_prompt_logprob()) continue;  // scored before a preemption made the prompt recompute
    batch.logit_rows.push_back(q_begin + i);
    rows.push_back({&rs, sr.tokens[static_cast<size_t>(target)]});
  }
}

void score_prompt_rows(std::span<const PromptLogprobRow> rows, std::span<const float> logits, size_t vocab,
                       const Tokenizer& tok, ThreadPool& pool) {
  std::vector<TokenLogprob> scored(rows.size());
  pool.parallel_for(static_cast<int64_t>(rows.size()), 1, [&](int64_t begin, int64_t end) {
    for (int64_t i = begin; i < end; ++i) {
      const size_t k = static_cast<size_t>(i);
      scored[k] =
          token_logprobs(logits.subspan(k * vocab, vocab), rows[k].token, rows[k].rs->request().top_logprobs, tok);
    }
  });
  for (size_t k = 0; k < rows.size(); ++k) rows[k].rs->add_prompt_logprob(std::move(scored[k]));
}

}  // namespace cai
