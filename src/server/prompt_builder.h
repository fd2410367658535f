// Prompt building: chat messages → text via the model's chat template (or a plain fallback) → token ids.
#pragma once

#include <nlohmann/json.hpp>

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/status.h"
#include "server/tools/tool_prompt.h"
#include "tokenizer/chat_template.h"
#include "tokenizer/tokenizer.h"

namespace cai::server {

struct BuiltPrompt {
  std::vector<int32_t> tokens;
  bool opens_think = false;  // the rendered prompt ends inside <think> (output starts as reasoning)
  bool added_bos = false;    // tokens[0] is a BOS the text did not hold
  std::string text;          // the text the tokens encode (decoded for a prompt given as token ids)
};

class PromptBuilder {
 public:
  // `template_source` empty → the fallback: message contents joined by "\n\n" with no role markup, which is what a
  // base model without a chat template (e.g. TinyStories) can continue. Bad template → invalid_argument.
  static Result<PromptBuilder> create(const Tokenizer& tokenizer, const std::string& template_source);

  // The chat prompt's text: rendered with add_generation_prompt=true, bos_token and eos_token, and the `tools` offered
  // (see tool_prompt.h). Template errors (e.g. raise_exception on a bad role order) → invalid_argument.
  Result<std::string> chat_text(const nlohmann::ordered_json& messages, const ToolOffer& tools = {}) const;
  // `rendered` (chat_text's) with the start of the answer a client gave (an Anthropic prefill) appended, for the model
  // to continue: after a <think> the template opened is closed, or after a blank line without a template.
  std::string with_prefill(std::string rendered, const std::string& prefill) const;
  // chat_text, encoded.
  Result<BuiltPrompt> chat(const nlohmann::ordered_json& messages, const ToolOffer& tools = {}) const;
  // How the model writes tool calls, and what its template does with tools.
  const ToolTemplateStyle& tool_style() const { return tool_style_; }
  // A prompt text (chat_text's, or a completion's) as tokens. BOS is added only when the tokenizer wants one and the
  // text lacks it.
  BuiltPrompt encode(const std::string& text) const;
  // Completion prompt as token ids (checked against the vocabulary).
  Result<BuiltPrompt> completion_tokens(const std::vector<int32_t>& ids) const;
  bool has_template() const { return tpl_.has_value(); }
  int n_vocab() const { return tok_->n_vocab(); }
  // The most text bytes one token stands for, so a text of B bytes has at least B / longest_token_bytes() tokens.
  // Exceptions, all of text no model can use: where a vocabulary has no byte fallback, a run of unknown characters
  // becomes one <unk>; a Strip normalizer drops whitespace; Unicode composition (NFC) shortens some sequences.
  size_t longest_token_bytes() const { return longest_token_bytes_; }
  // A lower bound on the tokens of `text` (as encode() makes them) found without encoding it whole: slices of at
  // most 256 KiB cut after white space are encoded one by one, stopping once the count passes `stop_above`, so the
  // cost is that of one slice however long the text. A cut can merge fewer tokens than the whole text would: each
  // counts kCutSlack tokens less, far more than any real text loses there.
  size_t tokens_at_least(std::string_view text, size_t stop_above) const;
  static constexpr size_t kCutSlack = 64;

 private:
  PromptBuilder(const Tokenizer& tokenizer, std::optional<ChatTemplate> tpl, ToolTemplateStyle tool_style);

  const Tokenizer* tok_;
  std::optional<ChatTemplate> tpl_;
  ToolTemplateStyle tool_style_;
  size_t longest_token_bytes_ = 1;
};

}  // namespace cai::server
