// Prompt building: chat messages → text via the model's chat template (or a plain fallback) → token ids.
#pragma once

#include <nlohmann/json.hpp>

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "core/status.h"
#include "tokenizer/chat_template.h"
#include "tokenizer/tokenizer.h"

namespace cai::server {

struct BuiltPrompt {
  std::vector<int32_t> tokens;
  bool opens_think = false;  // the rendered prompt ends inside <think> (output starts as reasoning)
};

class PromptBuilder {
 public:
  // `template_source` empty → the fallback: message contents joined by "\n\n" with no role markup, which is what a
  // base model without a chat template (e.g. TinyStories) can continue. Bad template → invalid_argument.
  static Result<PromptBuilder> create(const Tokenizer& tokenizer, const std::string& template_source);

  // Renders with add_generation_prompt=true, bos_token and eos_token. Template errors (e.g. raise_exception on a
  // bad role order) → invalid_argument. BOS is added only when the tokenizer wants one and the text lacks it.
  Result<BuiltPrompt> chat(const nlohmann::ordered_json& messages) const;
  // Completion prompt as text (BOS per the tokenizer) or as token ids (checked against the vocabulary).
  Result<BuiltPrompt> completion_text(const std::string& text) const;
  Result<BuiltPrompt> completion_tokens(const std::vector<int32_t>& ids) const;
  bool has_template() const { return tpl_.has_value(); }

 private:
  PromptBuilder(const Tokenizer& tokenizer, std::optional<ChatTemplate> tpl) : tok_(&tokenizer), tpl_(std::move(tpl)) {}
  BuiltPrompt encode(const std::string& text) const;

  const Tokenizer* tok_;
  std::optional<ChatTemplate> tpl_;
};

}  // namespace cai::server
