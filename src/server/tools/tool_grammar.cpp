// Forced tool calls: one call per offered function as literal text around its arguments' JSON Schema grammar.
#include "server/tools/tool_grammar.h"

#include <fmt/format.h>

namespace cai::server {

using grammar::Grammar;

namespace {

// The grammar of `function`'s arguments: its parameters schema (in the client's property order), or any JSON object
// when it has none.
Result<Grammar> arguments_grammar(const nlohmann::ordered_json& function) {
  auto params = function.find("parameters");
  if (params == function.end() || params->is_null()) return Grammar::json_object();
  return Grammar::json_schema(*params);
}

// One call of `function` in `syntax` (DeepSeek's calls-begin/-end frame is added around all calls).
Grammar call_grammar(ToolSyntax syntax, const nlohmann::ordered_json& function, const Grammar& args) {
  const std::string name = function["name"].get<std::string>();
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

Result<std::shared_ptr<const Grammar>> forced_tool_grammar(ToolSyntax syntax, const ToolOffer& offer, bool parallel) {
  if (offer.tools.empty() || (offer.choice != ToolChoice::kRequired && offer.choice != ToolChoice::kFunction))
    return std::shared_ptr<const Grammar>();
  std::vector<Grammar> options;
  for (size_t i = 0; i < offer.tools.size(); ++i) {
    const nlohmann::ordered_json& function = offer.tools[i]["function"];
    if (offer.choice == ToolChoice::kFunction && function["name"] != offer.function) continue;
    // A schema the grammar cannot express is refused: "any object" instead would let arguments through that do not
    // match the function's parameters.
    Result<Grammar> args = arguments_grammar(function);
    if (!args.ok()) {
      const std::string path =
          i < offer.schema_paths.size() ? offer.schema_paths[i] : fmt::format("tools[{}].function.parameters", i);
      return invalid_argument("{}: {}", path, args.status().message());
    }
    options.push_back(call_grammar(syntax, function, args.value()));
  }
  Grammar call = Grammar::alternatives(std::move(options));
  Grammar calls = parallel ? Grammar::one_or_more(std::move(call), Grammar::literal("\n")) : std::move(call);
  if (syntax == ToolSyntax::kDeepSeek)
    calls = Grammar::sequence(
        {Grammar::literal("<｜tool▁calls▁begin｜>"), std::move(calls), Grammar::literal("<｜tool▁calls▁end｜>")});
  return std::make_shared<const Grammar>(std::move(calls));
}

}  // namespace cai::server
