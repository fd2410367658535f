// Tool calling in the prompt: what a chat template gets when the request has tools or tool history. A template that
// reads `tools` gets them as transformers passes them; for one that does not, the server describes the tools (and the
// reply syntax the parser expects) in the system message. Assistant tool_calls and tool results go to a template that
// renders them as sent; for one that does not, they are written into the messages' content.
#pragma once

#include <nlohmann/json.hpp>

#include <string>
#include <string_view>

#include "server/openai/openai_request.h"
#include "server/tools/tool_calls.h"

namespace cai::server {

// What a chat template (empty: none) does with tools.
struct ToolTemplateStyle {
  ToolSyntax syntax = ToolSyntax::kGeneric;
  bool uses_tools = false;          // reads the `tools` variable
  bool renders_tool_calls = false;  // renders assistant tool_calls and tool messages itself
};
ToolTemplateStyle tool_template_style(std::string_view template_source);

// The tools offered to a request and how it must use them; tools empty → none (also for tool_choice "none").
struct ToolOffer {
  nlohmann::ordered_json tools = nlohmann::ordered_json::array();
  ToolChoice choice = ToolChoice::kAuto;
  std::string function;                   // kFunction
  std::vector<std::string> schema_paths;  // ApiRequest::tool_schema_paths
};
// The offer of `req` (no tools when tool_choice is "none").
ToolOffer tool_offer(const ApiRequest& req);

// The server's description of `offer` for a template without tools: the function signatures and the reply syntax.
std::string describe_tools(ToolSyntax syntax, const ToolOffer& offer);
// Assistant tool_calls ([{"id", "type", "function": {"name", "arguments"}}]) as the model writes them in `syntax`.
std::string tool_calls_text(ToolSyntax syntax, const nlohmann::ordered_json& tool_calls);

// `messages` as the template of `style` should get them for `offer` (unchanged when there is nothing to do).
nlohmann::ordered_json messages_for_template(const ToolTemplateStyle& style, const nlohmann::ordered_json& messages,
                                             const ToolOffer& offer);

}  // namespace cai::server
