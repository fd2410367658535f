// Prompt building: chat template rendering (or the template-less fallback) and encoding to token ids.
#include "server/prompt_builder.h"

#include <algorithm>

#include "tokenizer/reasoning_parser.h"

namespace cai::server {

PromptBuilder::PromptBuilder(const Tokenizer& tokenizer, std::optional<ChatTemplate> tpl)
    : tok_(&tokenizer), tpl_(std::move(tpl)) {
  for (int32_t id = 0; id < tok_->n_vocab(); ++id)
    longest_token_bytes_ = std::max(longest_token_bytes_, tok_->token_text(id).size());
}

Result<PromptBuilder> PromptBuilder::create(const Tokenizer& tokenizer, const std::string& template_source) {
  if (template_source.empty()) return PromptBuilder(tokenizer, std::nullopt);
  Result<ChatTemplate> tpl = ChatTemplate::parse(template_source);
  if (!tpl.ok()) return invalid_argument("chat template: {}", tpl.status().message());
  return PromptBuilder(tokenizer, std::move(tpl).value());
}

BuiltPrompt PromptBuilder::encode(const std::string& text) const {
  const std::string bos = tok_->bos_text();
  const bool add_bos = tok_->add_bos_default() && (bos.empty() || !text.starts_with(bos));
  BuiltPrompt out;
  out.tokens = tok_->encode(text, add_bos, /*parse_special=*/true);
  out.opens_think = prompt_opens_think(text);
  return out;
}

Result<std::string> PromptBuilder::chat_text(const nlohmann::ordered_json& messages) const {
  if (tpl_) {
    nlohmann::ordered_json ctx = {{"messages", messages},
                                  {"add_generation_prompt", true},
                                  {"bos_token", tok_->bos_text()},
                                  {"eos_token", tok_->eos_text()}};
    Result<std::string> rendered = tpl_->render_ordered(ctx);
    if (!rendered.ok())
      return invalid_argument("the chat template rejected the messages: {}", rendered.status().message());
    return std::move(rendered).value();
  }
  std::string text;
  for (const auto& m : messages) {
    const std::string& content = m["content"].get_ref<const std::string&>();
    if (content.empty()) continue;
    if (!text.empty()) text += "\n\n";
    text += content;
  }
  return text;
}

Result<BuiltPrompt> PromptBuilder::chat(const nlohmann::ordered_json& messages) const {
  CAI_ASSIGN_OR_RETURN(std::string text, chat_text(messages));
  return encode(text);
}

Result<BuiltPrompt> PromptBuilder::completion_tokens(const std::vector<int32_t>& ids) const {
  for (int32_t id : ids)
    if (id < 0 || id >= tok_->n_vocab())
      return invalid_argument("prompt token id {} is outside the vocabulary (0..{})", id, tok_->n_vocab() - 1);
  return BuiltPrompt{ids, false};
}

}  // namespace cai::server
