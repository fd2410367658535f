// ReasoningBudget: caps the tokens an R1-style model spends inside <think>…</think>; once spent, the tokens of
// "\n</think>\n\n" are forced in place of sampling so that the answer follows.
#pragma once

#include <cstdint>
#include <optional>
#include <string_view>
#include <vector>

#include "tokenizer/reasoning_parser.h"

namespace cai {

class Tokenizer;

// The text forced when the budget is spent.
inline constexpr std::string_view kReasoningClose = "\n</think>\n\n";

// kReasoningClose as tokens that continue earlier text (a SentencePiece dummy-prefix space is left out); empty when
// the vocabulary cannot write it (a piece would become <unk> or another token the detokenizer skips).
std::vector<int32_t> reasoning_close_tokens(const Tokenizer& tokenizer);

class ReasoningBudget {
 public:
  // `max_tokens` generated tokens at most inside the think block (the one that opens it counts); `close_tokens` =
  // kReasoningClose encoded. A model whose output does not start with <think> (and whose prompt did not open it)
  // is never forced.
  ReasoningBudget(int max_tokens, bool prompt_opened_think, std::vector<int32_t> close_tokens);

  // The token to emit instead of sampling, while the close sequence is being forced.
  std::optional<int32_t> forced() const;
  // Feeds each generated token's text (sampled or forced), in order.
  void observe(std::string_view text);
  int n_reasoning_tokens() const { return n_reasoning_; }

 private:
  ReasoningParser parser_;
  int max_tokens_;
  int n_reasoning_ = 0;
  std::vector<int32_t> close_;
  size_t n_forced_ = 0;
  bool closing_ = false;
  bool done_ = false;
};

}  // namespace cai
