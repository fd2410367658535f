// Tool calling in a chat request: field-by-field validation of tool definitions, tool_choice and tool messages.
#include "server/tools/tool_request.h"

#include <fmt/format.h>

#include <set>

#include "server/tools/tool_calls.h"

namespace cai::server {

using nlohmann::json;
using nlohmann::ordered_json;

namespace {

// The value of `key` in `obj`, or null when absent or null.
const json* field(const json& obj, const char* key) {
  auto it = obj.find(key);
  return it == obj.end() || it->is_null() ? nullptr : &*it;
}

std::optional<ApiError> read_tool(const json& t, const std::string& param, std::set<std::string>& names,
                                  ordered_json& out) {
  if (!t.is_object()) return bad_request("each tool must be an object", param);
  const json* type = field(t, "type");
  if (!type || *type != "function")
    return bad_request("each tool needs \"type\": \"function\" (the only tool type supported)", param + ".type");
  const json* fn = field(t, "function");
  if (!fn || !fn->is_object()) return bad_request("a function tool needs a 'function' object", param + ".function");
  const json* name = field(*fn, "name");
  if (!name || !name->is_string() || !is_valid_tool_name(name->get_ref<const std::string&>()))
    return bad_request("a function name must be 1 to 64 letters, digits, '_' or '-'", param + ".function.name");
  if (!names.insert(name->get<std::string>()).second)
    return bad_request(fmt::format("two tools are named '{}'", name->get<std::string>()), param + ".function.name");
  const json* description = field(*fn, "description");
  if (description && !description->is_string())
    return bad_request("a function description must be a string", param + ".function.description");
  const json* parameters = field(*fn, "parameters");
  if (parameters) {
    const json* schema_type = parameters->is_object() ? field(*parameters, "type") : nullptr;
    if (!parameters->is_object() || (schema_type && *schema_type != "object"))
      return bad_request("function parameters must be a JSON schema of type \"object\"",
                         param + ".function.parameters");
  }
  const json* strict = field(*fn, "strict");
  if (strict && !strict->is_boolean()) return bad_request("'strict' must be a boolean", param + ".function.strict");
  out.push_back(ordered_json::parse(t.dump()));  // the definition as sent, for the chat template
  return std::nullopt;
}

std::optional<ApiError> read_tool_choice(const json& choice, const std::set<std::string>& names, ApiRequest& req) {
  if (choice.is_string()) {
    const std::string& s = choice.get_ref<const std::string&>();
    if (s == "auto")
      req.tool_choice = ToolChoice::kAuto;
    else if (s == "none")
      req.tool_choice = ToolChoice::kNone;
    else if (s == "required")
      req.tool_choice = ToolChoice::kRequired;
    else
      return bad_request(fmt::format("'tool_choice' must be auto, none, required or a function; got '{}'", s),
                         "tool_choice");
  } else {
    const json* type = choice.is_object() ? field(choice, "type") : nullptr;
    const json* fn = choice.is_object() ? field(choice, "function") : nullptr;
    const json* name = fn && fn->is_object() ? field(*fn, "name") : nullptr;
    if (!type || *type != "function" || !name || !name->is_string())
      return bad_request(
          "'tool_choice' must be \"auto\", \"none\", \"required\" or {\"type\": \"function\", "
          "\"function\": {\"name\": ...}}",
          "tool_choice");
    if (!names.count(name->get<std::string>()))
      return bad_request(
          fmt::format("'tool_choice' names the function '{}', which is not among the tools", name->get<std::string>()),
          "tool_choice");
    req.tool_choice = ToolChoice::kFunction;
    req.tool_choice_name = name->get<std::string>();
  }
  if (names.empty() && (req.tool_choice == ToolChoice::kRequired || req.tool_choice == ToolChoice::kFunction))
    return bad_request("'tool_choice' requires 'tools'", "tool_choice");
  return std::nullopt;
}

std::optional<ApiError> read_tool_call(const json& c, const std::string& param, ordered_json& out) {
  if (!c.is_object()) return bad_request("each tool call must be an object", param);
  const json* id = field(c, "id");
  if (!id || !id->is_string()) return bad_request("a tool call needs a string 'id'", param + ".id");
  const json* type = field(c, "type");
  if (type && *type != "function") return bad_request("a tool call's type must be \"function\"", param + ".type");
  const json* fn = field(c, "function");
  if (!fn || !fn->is_object()) return bad_request("a tool call needs a 'function' object", param + ".function");
  const json* name = field(*fn, "name");
  if (!name || !name->is_string()) return bad_request("a tool call needs a function name", param + ".function.name");
  const json* args = field(*fn, "arguments");
  if (!args || !args->is_string())
    return bad_request("a tool call's arguments must be a string (JSON text)", param + ".function.arguments");
  out.push_back({{"id", *id}, {"type", "function"}, {"function", {{"name", *name}, {"arguments", *args}}}});
  return std::nullopt;
}

}  // namespace

std::optional<ApiError> read_tool_fields(const json& body, ApiRequest& req) {
  std::set<std::string> names;
  if (const json* tools = field(body, "tools")) {
    if (!tools->is_array()) return bad_request("'tools' must be an array", "tools");
    for (size_t i = 0; i < tools->size(); ++i)
      if (auto e = read_tool((*tools)[i], fmt::format("tools[{}]", i), names, req.tools)) return e;
  }
  if (const json* choice = field(body, "tool_choice"))
    if (auto e = read_tool_choice(*choice, names, req)) return e;
  if (const json* parallel = field(body, "parallel_tool_calls")) {
    if (!parallel->is_boolean()) return bad_request("'parallel_tool_calls' must be a boolean", "parallel_tool_calls");
    req.parallel_tool_calls = parallel->get<bool>();
  }
  return std::nullopt;
}

std::optional<ApiError> read_message_tool_parts(const json& m, const std::string& role, const std::string& param,
                                                ordered_json& out) {
  if (role == "tool") {
    const json* id = field(m, "tool_call_id");
    if (!id || !id->is_string())
      return bad_request("a tool message needs a string 'tool_call_id'", param + ".tool_call_id");
    out["tool_call_id"] = *id;
    return std::nullopt;
  }
  const json* calls = field(m, "tool_calls");
  if (!calls) return std::nullopt;
  if (role != "assistant") return bad_request("only assistant messages may have 'tool_calls'", param + ".tool_calls");
  if (!calls->is_array()) return bad_request("'tool_calls' must be an array", param + ".tool_calls");
  if (calls->empty()) return std::nullopt;
  ordered_json parsed = ordered_json::array();
  for (size_t i = 0; i < calls->size(); ++i)
    if (auto e = read_tool_call((*calls)[i], fmt::format("{}.tool_calls[{}]", param, i), parsed)) return e;
  if (out["content"] == "") out["content"] = nullptr;
  out["tool_calls"] = std::move(parsed);
  return std::nullopt;
}

}  // namespace cai::server
