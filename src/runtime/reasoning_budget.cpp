// ReasoningBudget: counts reasoning tokens with the same <think> splitter the server uses, then forces the close.
#include "runtime/reasoning_budget.h"

#include "tokenizer/tokenizer.h"

namespace cai {

std::vector<int32_t> reasoning_close_tokens(const Tokenizer& tokenizer) {
  std::vector<int32_t> ids = tokenizer.encode(kReasoningClose, /*add_bos=*/false, /*parse_special=*/true);
  const std::string piece = ids.empty() ? std::string() : tokenizer.token_text(ids[0]);
  if (piece == " " || piece == "\u2581") ids.erase(ids.begin());  // the dummy prefix SentencePiece prepends
  for (int32_t id : ids)
    if (tokenizer.is_special(id)) return {};
  return ids;
}

ReasoningBudget::ReasoningBudget(int max_tokens, bool prompt_opened_think, std::vector<int32_t> close_tokens)
    : parser_(prompt_opened_think), max_tokens_(max_tokens), close_(std::move(close_tokens)) {
  done_ = close_.empty();
  closing_ = !done_ && parser_.in_reasoning() && max_tokens_ <= 0;
}

std::optional<int32_t> ReasoningBudget::forced() const {
  if (!closing_ || done_) return std::nullopt;
  return close_[n_forced_];
}

void ReasoningBudget::observe(std::string_view text) {
  if (done_) return;
  if (closing_) {
    done_ = ++n_forced_ == close_.size();
    return;
  }
  (void)parser_.push(text);
  if (parser_.in_reasoning()) {
    closing_ = ++n_reasoning_ >= max_tokens_;
  } else if (parser_.in_content()) {
    done_ = true;  // the model closed </think> itself, or never opened it
  }
}

}  // namespace cai
