// SequenceGrammar: one sequence's place in its request's grammar. With an R1-style prompt that opened <think>, the
// reasoning is free and the grammar starts after </think> (the whitespace after it is allowed).
#pragma once

#include <memory>
#include <span>
#include <string_view>

#include "runtime/grammar/token_mask.h"
#include "runtime/sampler.h"
#include "tokenizer/reasoning_parser.h"

namespace cai::grammar {

// The masker for `g` over `vocab`; `after_reasoning`: the output starts inside <think> (a few whitespace bytes may
// come before the grammar's text).
std::shared_ptr<TokenMasker> make_token_masker(const Grammar& g, bool after_reasoning,
                                               std::shared_ptr<const TokenVocabulary> vocab);

class SequenceGrammar {
 public:
  SequenceGrammar(std::shared_ptr<TokenMasker> masker, bool starts_in_reasoning);

  // Whether the next token is constrained.
  bool active() const { return active_ && state_ >= 0; }
  // Whether the output is still inside <think>, before the constrained text: it may not end there (the structure the
  // request requires comes after the reasoning), so the caller bans end-of-generation tokens.
  bool in_reasoning() const { return !active_; }
  // Masks `logits` (the whole vocabulary row) for the next token; only when active().
  void apply(std::span<float> logits) { masker_->apply(state_, logits); }
  // Whether `token` may come next (only when active()).
  bool allows(int32_t token) const { return masker_->allows(state_, token); }
  // Whether sampling may skip the mask when the unmasked draw is allowed: exact when nothing truncates the
  // distribution (a draw from p kept only if allowed, else redrawn from the masked p, is a draw from the masked p;
  // greedy's argmax is the masked argmax whenever allowed).
  static bool can_check_first(const SamplingParams& p) {
    return p.temperature == 0 || (p.top_k == 0 && p.top_p >= 1.0f && p.min_p <= 0.0f);
  }
  // Feeds a generated token and the text the detokenizer made of it.
  void push(int32_t token, std::string_view text);
  // The grammar's text is complete and nothing may follow it.
  bool finished() const { return active() && masker_->finished(state_); }

 private:
  std::shared_ptr<TokenMasker> masker_;
  std::optional<ReasoningParser> reasoning_;  // while the output is still inside <think>
  bool active_;
  int32_t state_;
};

}  // namespace cai::grammar
