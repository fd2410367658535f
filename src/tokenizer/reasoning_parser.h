// ReasoningParser: splits streamed model text into R1 reasoning (<think>…</think>) and the answer, tags split anywhere.
#pragma once

#include <string>
#include <string_view>

namespace cai {

struct ReasoningDelta {
  std::string reasoning;  // text inside <think>…</think>
  std::string content;    // everything else
};

// Streaming splitter. An output that starts (after optional whitespace) with <think> is reasoning until </think>;
// when the prompt already opened <think> (R1 distill templates end with "<think>\n") the output starts as reasoning.
// An unclosed <think> leaves everything after it as reasoning. Whitespace right after either tag is dropped.
// A <think> later in the answer is ordinary text.
class ReasoningParser {
 public:
  explicit ReasoningParser(bool prompt_opened_think = false);

  // Feed the next piece of output; returns what can be classified so far (a possible partial tag is held back).
  ReasoningDelta push(std::string_view text);
  // End of output: releases whatever was held back into the section it belongs to.
  ReasoningDelta finish();
  // push(text), then finish() when the output ends with it (`last`), as one delta.
  ReasoningDelta push(std::string_view text, bool last);
  // Where the output is now: inside <think>…</think>, or past it (or never in it).
  bool in_reasoning() const { return state_ == State::kReasoning; }
  bool in_content() const { return state_ == State::kContent; }

 private:
  enum class State { kStart, kReasoning, kContent };
  bool drop_leading_space();  // true when held_ still has text after dropping whitespace (if skip_space_)

  State state_;
  bool skip_space_;
  std::string held_;  // text not classified yet
};

// Whether a rendered prompt ends inside an open <think> block (its last <think> has no </think> after it).
bool prompt_opens_think(std::string_view prompt);

}  // namespace cai
