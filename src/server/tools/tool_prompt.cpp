// Tool calling in the prompt: the server's tool description, tool-call history as text, and the message rewrite for
// templates that know nothing of tools.
#include "server/tools/tool_prompt.h"

#include <fmt/format.h>

namespace cai::server {

using nlohmann::ordered_json;

ToolTemplateStyle tool_template_style(std::string_view template_source) {
  return {detect_tool_syntax(template_source), template_uses_tools(template_source),
          template_renders_tool_calls(template_source)};
}

ToolOffer tool_offer(const ApiRequest& req) {
  ToolOffer offer;
  if (req.tool_choice == ToolChoice::kNone) return offer;
  offer.tools = req.tools;
  offer.choice = req.tool_choice;
  offer.function = req.tool_choice_name;
  offer.schema_paths = req.tool_schema_paths;
  return offer;
}

namespace {

// A call's arguments (JSON text) as an object; text that is no JSON object stays a string.
ordered_json arguments_value(const std::string& text) {
  ordered_json v = ordered_json::parse(text, nullptr, /*allow_exceptions=*/false);
  return v.is_object() ? v : ordered_json(text);
}

std::string call_text(ToolSyntax syntax, const std::string& name, const std::string& arguments) {
  switch (syntax) {
    case ToolSyntax::kDeepSeek:
      return fmt::format("<｜tool▁call▁begin｜>function<｜tool▁sep｜>{}\n```json\n{}\n```<｜tool▁call▁end｜>", name,
                         arguments);
    case ToolSyntax::kHermes:
      return "<tool_call>\n" + ordered_json{{"name", name}, {"arguments", arguments_value(arguments)}}.dump() +
             "\n</tool_call>";
    case ToolSyntax::kLlama3: return ordered_json{{"name", name}, {"parameters", arguments_value(arguments)}}.dump();
    case ToolSyntax::kGeneric: break;
  }
  return ordered_json{{"name", name}, {"arguments", arguments_value(arguments)}}.dump();
}

// The reply format of `syntax`, as the description tells the model.
std::string_view reply_format(ToolSyntax syntax) {
  switch (syntax) {
    case ToolSyntax::kDeepSeek:
      return "<｜tool▁calls▁begin｜><｜tool▁call▁begin｜>function<｜tool▁sep｜><function-name>\n```json\n"
             "<arguments-json-object>\n```<｜tool▁call▁end｜><｜tool▁calls▁end｜>";
    case ToolSyntax::kHermes:
      return "<tool_call>\n{\"name\": <function-name>, \"arguments\": <arguments-json-object>}\n</tool_call>";
    case ToolSyntax::kLlama3: return "{\"name\": <function-name>, \"parameters\": <arguments-json-object>}";
    case ToolSyntax::kGeneric: break;
  }
  return "{\"name\": <function-name>, \"arguments\": <arguments-json-object>}";
}

}  // namespace

std::string describe_tools(ToolSyntax syntax, const ToolOffer& offer) {
  std::string text = "You can call these functions:\n";
  for (const ordered_json& t : offer.tools) text += t["function"].dump() + "\n";
  text += fmt::format("\nTo call a function, reply with nothing but the call, written as:\n{}\n", reply_format(syntax));
  if (offer.choice == ToolChoice::kRequired)
    text += "\nYou must call at least one function now.";
  else if (offer.choice == ToolChoice::kFunction)
    text += fmt::format("\nYou must call the function {} now.", offer.function);
  else
    text += "\nIf no function is needed, answer normally.";
  return text;
}

std::string tool_calls_text(ToolSyntax syntax, const ordered_json& tool_calls) {
  std::string text;
  for (const ordered_json& c : tool_calls) {
    if (!text.empty() && syntax != ToolSyntax::kDeepSeek) text += "\n";
    text += call_text(syntax, c["function"]["name"].get<std::string>(), c["function"]["arguments"].get<std::string>());
  }
  if (syntax == ToolSyntax::kDeepSeek) text = "<｜tool▁calls▁begin｜>" + text + "<｜tool▁calls▁end｜>";
  return text;
}

ordered_json messages_for_template(const ToolTemplateStyle& style, const ordered_json& messages,
                                   const ToolOffer& offer) {
  const bool describe = !offer.tools.empty() && !style.uses_tools;
  bool history = false;
  auto is_tool_result = [](const ordered_json& m) { return m.value("role", "") == "tool"; };
  for (const ordered_json& m : messages) history = history || m.contains("tool_calls") || is_tool_result(m);
  if (!describe && (!history || style.renders_tool_calls)) return messages;
  ordered_json out = ordered_json::array();
  for (const ordered_json& m : messages) {
    if (style.renders_tool_calls) {
      out.push_back(m);
    } else if (is_tool_result(m)) {
      out.push_back({{"role", "user"},
                     {"content", fmt::format("Result of the function call {}:\n{}",
                                             m["tool_call_id"].get<std::string>(), m["content"].get<std::string>())}});
    } else if (m.contains("tool_calls")) {
      std::string content = m["content"].is_string() ? m["content"].get<std::string>() : "";
      if (!content.empty()) content += "\n";
      out.push_back({{"role", "assistant"}, {"content", content + tool_calls_text(style.syntax, m["tool_calls"])}});
    } else {
      out.push_back(m);
    }
  }
  if (!describe) return out;
  const std::string description = describe_tools(style.syntax, offer);
  if (!out.empty() && out[0].value("role", "") == "system" && out[0]["content"].is_string()) {
    out[0]["content"] = out[0]["content"].get<std::string>() + "\n\n" + description;
  } else {
    out.insert(out.begin(), ordered_json{{"role", "system"}, {"content", description}});
  }
  return out;
}

}  // namespace cai::server
