// Verification: the tokens one sequence takes from a step's logits. Row 0 is sampled as a step without speculation
// would (the forced reasoning-close token, the grammar's mask, penalties, logit bias, the sampler); while the sampled
// token equals the next draft token, the next row is sampled the same way after it. The draft is the drafter's point
// proposal q = δ(d), so the speculative-sampling rule (accept d with probability min(1, p(d)/q(d)) = p(d), else draw
// from the residual max(0, p - q) normalised, which is p without d) is exactly "draw t from p; accept d iff t = d,
// else keep t": every token is drawn from the target distribution, and greedy decoding takes the same tokens as
// without speculation.
#pragma once

#include <span>
#include <string>
#include <vector>

#include "runtime/request_state.h"

namespace cai {

struct VerifiedTokens {
  std::vector<int32_t> tokens;         // the accepted draft tokens, then the token sampled after them
  std::vector<TokenLogprob> logprobs;  // one per token when the request asked for logprobs
  std::string text;                    // the text they release
  bool stop = false;                   // EOS, a stop string or a whole structured output ends the sequence
  int n_accepted() const { return static_cast<int>(tokens.size()) - 1; }
};

// rows: [draft.size() + 1, vocab] logits, row j computed after draft[0, j); history: the sequence's tokens before the
// step. Feeds every taken token to `rs` (detokenizer, stop strings, grammar, reasoning budget). `tok` may be null.
VerifiedTokens verify_draft(RequestState& rs, std::span<const float> rows, std::span<const int32_t> draft,
                            std::span<const int32_t> history, const Tokenizer* tok);

}  // namespace cai
