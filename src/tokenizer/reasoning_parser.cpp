// ReasoningParser: the streaming <think>…</think> splitter for R1-style outputs.
#include "tokenizer/reasoning_parser.h"

#include <algorithm>

namespace cai {

namespace {

constexpr std::string_view kOpen = "<think>";
constexpr std::string_view kClose = "</think>";

bool is_space(char c) { return c == ' ' || c == '\n' || c == '\r' || c == '\t'; }

// Length of the longest suffix of `text` that is a proper prefix of `tag` (a tag that may continue in the next piece).
size_t partial_tag_suffix(std::string_view text, std::string_view tag) {
  for (size_t n = std::min(text.size(), tag.size() - 1); n > 0; --n)
    if (text.substr(text.size() - n) == tag.substr(0, n)) return n;
  return 0;
}

}  // namespace

ReasoningParser::ReasoningParser(bool prompt_opened_think)
    : state_(prompt_opened_think ? State::kReasoning : State::kStart), skip_space_(prompt_opened_think) {}

bool ReasoningParser::drop_leading_space() {
  if (skip_space_) {
    size_t n = 0;
    while (n < held_.size() && is_space(held_[n])) ++n;
    held_.erase(0, n);
    if (held_.empty()) return false;
    skip_space_ = false;
  }
  return !held_.empty();
}

ReasoningDelta ReasoningParser::push(std::string_view text) {
  ReasoningDelta out;
  held_.append(text);
  for (;;) {
    if (state_ == State::kStart) {
      size_t p = 0;
      while (p < held_.size() && is_space(held_[p])) ++p;
      const std::string_view rest = std::string_view(held_).substr(p);
      if (rest.empty()) return out;  // only whitespace so far: could still precede <think>
      if (rest.starts_with(kOpen)) {
        held_.erase(0, p + kOpen.size());
        state_ = State::kReasoning;
        skip_space_ = true;
        continue;
      }
      if (kOpen.starts_with(rest)) return out;  // "<thi" — wait for more
      state_ = State::kContent;
      continue;
    }
    if (!drop_leading_space()) return out;
    if (state_ == State::kContent) {
      out.content += held_;
      held_.clear();
      return out;
    }
    const size_t close = held_.find(kClose);
    if (close != std::string::npos) {
      out.reasoning.append(held_, 0, close);
      held_.erase(0, close + kClose.size());
      state_ = State::kContent;
      skip_space_ = true;
      continue;
    }
    const size_t keep = partial_tag_suffix(held_, kClose);
    out.reasoning.append(held_, 0, held_.size() - keep);
    held_.erase(0, held_.size() - keep);
    return out;
  }
}

ReasoningDelta ReasoningParser::push(std::string_view text, bool last) {
  ReasoningDelta d = push(text);
  if (!last) return d;
  ReasoningDelta rest = finish();
  d.reasoning += rest.reasoning;
  d.content += rest.content;
  return d;
}

ReasoningDelta ReasoningParser::finish() {
  ReasoningDelta out;
  if (state_ == State::kReasoning) {
    if (drop_leading_space()) out.reasoning = std::move(held_);
  } else if (state_ == State::kContent) {
    if (drop_leading_space()) out.content = std::move(held_);
  } else {
    out.content = std::move(held_);
  }
  held_.clear();
  return out;
}

bool prompt_opens_think(std::string_view prompt) {
  const size_t open = prompt.rfind(kOpen);
  if (open == std::string_view::npos) return false;
  const size_t close = prompt.rfind(kClose);
  return close == std::string_view::npos || close < open;
}

}  // namespace cai
