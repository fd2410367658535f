// Forced tool calls: one call per offered function as literal text around its arguments' JSON Schema grammar.
#include "server/tools/tool_grammar.h"

namespace cai::server {

using grammar::Grammar;

namespace {

Grammar arguments_grammar(const nlohmann::ordered_json& function) {
  auto params = function.find("parameters");
  if (params == function.end() || params->is_null()) return Grammar::json_object();
  Result<Grammar> g = Grammar::json_schema(nlohmann::json::parse(params->dump()));
  return g.ok() ? std::move(g).value() : Grammar::json_object();
}

// One call of `function` in `syntax` (DeepSeek's calls-begin/-end frame is added around all calls).
Grammar call_grammar(ToolSyntax syntax, const nlohmann::ordered_json& function) {
  const std::string name = function["name"].get<std::string>();
  Grammar args = arguments_grammar(function);
  switch (syntax) {
    case ToolSyntax::kDeepSeek:
      return Grammar::sequence({Grammar::literal("<｜tool▁call▁begin｜>function<｜tool▁sep｜>" + name + "\n```json\n"),
                                args, Grammar::literal("\n```<｜tool▁call▁end｜>")});
    case ToolSyntax::kHermes:
      return Grammar::sequence({Grammar::literal("<tool_call>\n{\"name\": \"" + name + "\", \"arguments\": "), args,
                                Grammar::literal("}\n</tool_call>")});
    case ToolSyntax::kLlama3:
      return Grammar::sequence(
          {Grammar::literal("{\"name\": \"" + name + "\", \"parameters\": "), args, Grammar::literal("}")});
    case ToolSyntax::kGeneric: break;
  }
  return Grammar::sequence(
      {Grammar::literal("{\"name\": \"" + name + "\", \"arguments\": "), args, Grammar::literal("}")});
}

}  // namespace

std::shared_ptr<const Grammar> forced_tool_grammar(ToolSyntax syntax, const ToolOffer& offer, bool parallel) {
  if (offer.tools.empty() || (offer.choice != ToolChoice::kRequired && offer.choice != ToolChoice::kFunction))
    return nullptr;
  std::vector<Grammar> options;
  for (const nlohmann::ordered_json& tool : offer.tools) {
    const nlohmann::ordered_json& function = tool["function"];
    if (offer.choice == ToolChoice::kFunction && function["name"] != offer.function) continue;
    options.push_back(call_grammar(syntax, function));
  }
  Grammar call = Grammar::alternatives(std::move(options));
  Grammar calls = parallel ? Grammar::one_or_more(std::move(call), Grammar::literal("\n")) : std::move(call);
  if (syntax == ToolSyntax::kDeepSeek)
    calls = Grammar::sequence(
        {Grammar::literal("<｜tool▁calls▁begin｜>"), std::move(calls), Grammar::literal("<｜tool▁calls▁end｜>")});
  return std::make_shared<const Grammar>(std::move(calls));
}

}  // namespace cai::server
