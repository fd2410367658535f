// RequestState: what the engine thread keeps per live sequence: sampler, incremental detokenizer, stop-string holdback,
// reasoning budget, and which request (group of n choices) and choice it is.
#pragma once

#include <memory>
#include <optional>
#include <utility>
#include <vector>
#include <string>

#include "cai/engine.h"
#include "runtime/grammar/sequence_grammar.h"
#include "runtime/reasoning_budget.h"
#include "tokenizer/tokenizer.h"

namespace cai {

class RequestState {
 public:
  // Choice `index` of the request whose id is `group`.
  RequestState(GenerationRequest request, EventCallback on_event, const Tokenizer* tokenizer, uint64_t group = 0,
               int index = 0);

  const GenerationRequest& request() const { return request_; }
  Sampler& sampler() { return sampler_; }
  uint64_t group() const { return group_; }
  // Sends `ev` to the client, tagged with this sequence's choice index.
  void emit(StreamEvent& ev) const {
    ev.index = index_;
    on_event_(ev);
  }

  // The token to emit instead of sampling (the reasoning budget is spent and </think> is being forced).
  std::optional<int32_t> forced_token() const { return budget_ ? budget_->forced() : std::nullopt; }
  // Feeds one generated token. Returns the text that may be released now; sets `stop_hit` when a stop string appeared
  // (the text from the stop string on is dropped and nothing more is produced).
  std::string push_token(int32_t token, bool& stop_hit);
  // Releases the held-back text at the end (not after a stop string).
  std::string finish_text();
  bool stopped() const { return stopped_; }
  // Structured output (the request's grammar, set by the engine); null when unconstrained.
  void set_grammar(std::unique_ptr<grammar::SequenceGrammar> g) { grammar_ = std::move(g); }
  grammar::SequenceGrammar* grammar() { return grammar_.get(); }
  // The stop string that ended the sequence ("" when none did).
  const std::string& stop_string() const { return stop_string_; }
  // Speculative decoding: a step verified `drafted` tokens and accepted `accepted` of them.
  void count_draft(int drafted, int accepted) { n_draft_tokens_ += drafted, n_accepted_tokens_ += accepted; }
  int n_draft_tokens() const { return n_draft_tokens_; }
  int n_accepted_tokens() const { return n_accepted_tokens_; }
  // GenerationRequest::prompt_logprobs for this choice (choice 0 only); the prompt position whose logprob comes next
  // (positions recomputed after a preemption are known already), adding it, and taking those not yet sent.
  bool wants_prompt_logprobs() const { return index_ == 0 && request_.prompt_logprobs && request_.top_logprobs >= 0; }
  int next_prompt_logprob() const { return n_prompt_logprobs_; }
  void add_prompt_logprob(TokenLogprob lp) {
    prompt_logprobs_.push_back(std::move(lp));
    ++n_prompt_logprobs_;
  }
  std::vector<TokenLogprob> take_prompt_logprobs() { return std::exchange(prompt_logprobs_, {}); }

 private:
  GenerationRequest request_;
  EventCallback on_event_;
  Sampler sampler_;
  uint64_t group_;
  int index_;
  std::unique_ptr<Tokenizer::StreamingDecoder> decoder_;  // null without a tokenizer
  std::optional<ReasoningBudget> budget_;                 // with max_reasoning_tokens >= 0 and a tokenizer
  std::unique_ptr<grammar::SequenceGrammar> grammar_;
  std::string held_;  // decoded text not yet released: it could be the start of a stop string
  size_t max_stop_len_ = 0;
  bool stopped_ = false;
  std::string stop_string_;
  int n_draft_tokens_ = 0, n_accepted_tokens_ = 0;
  std::vector<TokenLogprob> prompt_logprobs_;  // not yet sent, from position 0 (NaN: no context) on
  int n_prompt_logprobs_ = 0;                  // positions known
};

}  // namespace cai
