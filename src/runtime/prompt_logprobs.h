// Prompt logprobs (GenerationRequest::prompt_logprobs): which rows of a step's batch give them, and scoring those rows
// once the step's logits are known.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

#include "model/model.h"
#include "runtime/request_state.h"
#include "runtime/sched/scheduler.h"

namespace cai {

class ThreadPool;

// A batch row whose logits score the prompt token that follows it.
struct PromptLogprobRow {
  RequestState* rs;
  int32_t token;  // the prompt token the row's logits score
};

// Appends to `batch.logit_rows` (after every row already there) the rows of `r`'s chunk, which starts at batch row
// `q_begin`, whose next token is a prompt token `rs` has no logprob for yet; the prompt's first token (no context, NaN)
// is recorded when the chunk starts the prompt.
void add_prompt_logprob_rows(const ScheduledRequest& r, const SchedRequest& sr, int32_t q_begin, RequestState& rs,
                             const Tokenizer& tok, StepBatch& batch, std::vector<PromptLogprobRow>& rows);

// Scores each row from its logits (`logits` holds rows.size() × vocab values, in order) and adds the logprobs to the
// rows' requests, in order, on `pool`.
void score_prompt_rows(std::span<const PromptLogprobRow> rows, std::span<const float> logits, size_t vocab,
                       const Tokenizer& tok, ThreadPool& pool);

}  // namespace cai
