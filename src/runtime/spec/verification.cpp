// verify_draft: one sequence's sampling over its step's rows, token by token.
#include "runtime/spec/verification.h"

#include <limits>

#include "runtime/logprobs.h"

namespace cai {

namespace {

// The token a step without speculation would sample from `raw` after `history`.
int32_t sample_row(RequestState& rs, std::span<const float> raw, std::span<const int32_t> history,
                   std::vector<float>& work, const Tokenizer* tok) {
  if (std::optional<int32_t> forced = rs.forced_token()) return *forced;  // </think> is being written
  work.assign(raw.begin(), raw.end());
  grammar::SequenceGrammar* g = rs.grammar();
  if (g && g->in_reasoning() && tok && !rs.request().ignore_eos) {
    // A required structure follows the reasoning: the answer may not end before it (the budget closes <think>).
    for (int32_t id : tok->eog_ids())
      if (static_cast<size_t>(id) < work.size()) work[id] = -std::numeric_limits<float>::infinity();
    return rs.sampler().sample(work, history);
  }
  if (g && g->active() && !grammar::SequenceGrammar::can_check_first(rs.request().sampling))
    g->apply(work);  // structured output: disallowed tokens get -inf
  int32_t token = rs.sampler().sample(work, history);
  if (g && g->active() && !g->allows(token)) {  // the unmasked draw broke the grammar: draw again, masked
    work.assign(raw.begin(), raw.end());
    g->apply(work);
    token = rs.sampler().sample(work, history);
  }
  return token;
}

}  // namespace

VerifiedTokens verify_draft(RequestState& rs, std::span<const float> rows, std::span<const int32_t> draft,
                            std::span<const int32_t> history, const Tokenizer* tok) {
  const size_t vocab = rows.size() / (draft.size() + 1);
  const GenerationRequest& req = rs.request();
  VerifiedTokens out;
  std::vector<float> work;
  std::vector<int32_t> seen;  // history + the tokens taken so far, once there are some
  for (size_t j = 0; j <= draft.size(); ++j) {
    const std::span<const float> raw = rows.subspan(j * vocab, vocab);
    const int32_t token = sample_row(rs, raw, j == 0 ? history : std::span<const int32_t>(seen), work, tok);
    out.tokens.push_back(token);
    if (req.top_logprobs >= 0 && tok) out.logprobs.push_back(token_logprobs(raw, token, req.top_logprobs, *tok));
    const bool eos = !req.ignore_eos && tok && tok->is_eog(token);
    bool stop_hit = false;
    if (!eos) out.text += rs.push_token(token, stop_hit);
    const bool complete = rs.grammar() && rs.grammar()->finished();  // structured output is whole
    out.stop = eos || stop_hit || complete;
    if (out.stop || j == draft.size() || token != draft[j]) break;
    if (j == 0) seen.assign(history.begin(), history.end());
    seen.push_back(token);
  }
  return out;
}

}  // namespace cai
