// SequenceGrammar: follows <think>…</think>, then advances the grammar's DFA token by token.
#include "runtime/grammar/sequence_grammar.h"

#include "runtime/grammar/grammar_node.h"

namespace cai::grammar {

// Most whitespace bytes allowed between </think> and the grammar's text ("\n\n" in R1's template).
constexpr int kWhitespaceAfterReasoning = 4;

std::shared_ptr<TokenMasker> make_token_masker(const Grammar& g, bool after_reasoning,
                                               std::shared_ptr<const TokenVocabulary> vocab) {
  std::bitset<256> space;
  for (char c : std::string_view(" \t\r\n")) space.set(static_cast<unsigned char>(c));
  const Grammar full =
      after_reasoning ? Grammar::sequence({repeat(byte_set(space), 0, kWhitespaceAfterReasoning), g}) : g;
  std::optional<Program> program = compile_program(full);
  if (!program) program = compile_program(Grammar::literal(""));  // refused by json_schema() already
  return std::make_shared<TokenMasker>(std::move(*program), std::move(vocab));
}

SequenceGrammar::SequenceGrammar(std::shared_ptr<TokenMasker> masker, bool starts_in_reasoning)
    : masker_(std::move(masker)), active_(!starts_in_reasoning), state_(masker_->start()) {
  if (starts_in_reasoning) reasoning_.emplace(/*prompt_opened_think=*/true);
}

void SequenceGrammar::push(int32_t token, std::string_view text) {
  if (active_) {
    if (state_ >= 0) state_ = masker_->advance(state_, token);
    return;
  }
  const ReasoningDelta delta = reasoning_->push(text);
  if (!reasoning_->in_content()) return;
  // </think> was written: the grammar starts with whatever answer text this token already carried.
  active_ = true;
  reasoning_.reset();
  state_ = masker_->advance_bytes(state_, delta.content);
}

}  // namespace cai::grammar
