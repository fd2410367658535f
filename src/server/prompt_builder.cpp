// Prompt building: chat template rendering (or the template-less fallback) and encoding to token ids.
#include "server/prompt_builder.h"

#include <algorithm>

#include "tokenizer/reasoning_parser.h"

namespace cai::server {

PromptBuilder::PromptBuilder(const Tokenizer& tokenizer, std::optional<ChatTemplate> tpl, ToolTemplateStyle tool_style)
    : tok_(&tokenizer), tpl_(std::move(tpl)), tool_style_(tool_style) {
  for (int32_t id = 0; id < tok_->n_vocab(); ++id)
    longest_token_bytes_ = std::max(longest_token_bytes_, tok_->token_text(id).size());
}

Result<PromptBuilder> PromptBuilder::create(const Tokenizer& tokenizer, const std::string& template_source) {
  if (template_source.empty()) return PromptBuilder(tokenizer, std::nullopt, tool_template_style(""));
  Result<ChatTemplate> tpl = ChatTemplate::parse(template_source);
  if (!tpl.ok()) return invalid_argument("chat template: {}", tpl.status().message());
  return PromptBuilder(tokenizer, std::move(tpl).value(), tool_template_style(template_source));
}

BuiltPrompt PromptBuilder::encode(const std::string& text) const {
  const std::string bos = tok_->bos_text();
  const bool add_bos = tok_->add_bos_default() && (bos.empty() || !text.starts_with(bos));
  BuiltPrompt out;
  out.tokens = tok_->encode(text, add_bos, /*parse_special=*/true);
  out.opens_think = prompt_opens_think(text);
  out.added_bos = add_bos;
  out.text = text;
  return out;
}

size_t PromptBuilder::tokens_at_least(std::string_view text, size_t stop_above) const {
  constexpr size_t kSlice = 256 << 10, kLookBack = 4 << 10;
  size_t counted = 0, n_cuts = 0;
  while (!text.empty()) {
    size_t cut = text.size();
    if (cut > kSlice) {
      cut = kSlice;
      const size_t space = text.substr(kSlice - kLookBack, kLookBack).find_last_of(" \n");
      if (space != std::string_view::npos) cut = kSlice - kLookBack + space + 1;
      while (cut > 0 && (static_cast<unsigned char>(text[cut]) & 0xC0) == 0x80) --cut;  // not inside a character
      ++n_cuts;
    }
    counted += tok_->encode(text.substr(0, cut), /*add_bos=*/false, /*parse_special=*/true).size();
    text.remove_prefix(cut);
    if (counted > stop_above + n_cuts * kCutSlack) break;
  }
  return counted > n_cuts * kCutSlack ? counted - n_cuts * kCutSlack : 0;
}

namespace {

// `messages` with every null content made "" (for templates that fail on an assistant tool-call message without
// content, which OpenAI clients send as null); false when there was none.
bool null_contents_emptied(nlohmann::ordered_json& messages) {
  bool any = false;
  for (auto& m : messages)
    if (m.contains("content") && m["content"].is_null()) m["content"] = "", any = true;
  return any;
}

}  // namespace

Result<std::string> PromptBuilder::chat_text(const nlohmann::ordered_json& original, const ToolOffer& tools) const {
  nlohmann::ordered_json messages = messages_for_template(tool_style_, original, tools);
  if (tpl_) {
    nlohmann::ordered_json ctx = {{"messages", messages},
                                  {"add_generation_prompt", true},
                                  {"bos_token", tok_->bos_text()},
                                  {"eos_token", tok_->eos_text()}};
    if (!tools.tools.empty() && tool_style_.uses_tools) ctx["tools"] = tools.tools;
    Result<std::string> rendered = tpl_->render_ordered(ctx);
    if (!rendered.ok() && null_contents_emptied(ctx["messages"])) rendered = tpl_->render_ordered(ctx);
    if (!rendered.ok())
      return invalid_argument("the chat template rejected the messages: {}", rendered.status().message());
    return std::move(rendered).value();
  }
  std::string text;
  for (const auto& m : messages) {
    if (!m["content"].is_string()) continue;
    const std::string& content = m["content"].get_ref<const std::string&>();
    if (content.empty()) continue;
    if (!text.empty()) text += "\n\n";
    text += content;
  }
  return text;
}

std::string PromptBuilder::with_prefill(std::string rendered, const std::string& prefill) const {
  if (prefill.empty()) return rendered;
  if (!tpl_ && !rendered.empty()) rendered += "\n\n";
  if (prompt_opens_think(rendered)) rendered += "\n</think>\n\n";
  return rendered + prefill;
}

Result<BuiltPrompt> PromptBuilder::chat(const nlohmann::ordered_json& messages, const ToolOffer& tools) const {
  CAI_ASSIGN_OR_RETURN(std::string text, chat_text(messages, tools));
  return encode(text);
}

Result<BuiltPrompt> PromptBuilder::completion_tokens(const std::vector<int32_t>& ids) const {
  for (int32_t id : ids)
    if (id < 0 || id >= tok_->n_vocab())
      return invalid_argument("prompt token id {} is outside the vocabulary (0..{})", id, tok_->n_vocab() - 1);
  return BuiltPrompt{ids, false, false, tok_->decode(ids)};
}

}  // namespace cai::server
