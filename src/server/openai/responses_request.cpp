// OpenAI Responses API request schema: input items and tools translated into a chat request, checked field by field.
#include "server/openai/responses_request.h"

#include <fmt/format.h>

#include <array>
#include <map>

#include "server/ignored_fields.h"
#include "server/media_note.h"

namespace cai::server {

using nlohmann::ordered_json;

namespace {

constexpr std::string_view kRoute = "responses";

// Fields of the request this route knows; any other is ignored (ignore_field).
constexpr std::array<std::string_view, 41> kKnown = {
    "model", "input", "instructions", "max_output_tokens", "temperature", "top_p", "top_logprobs", "stream",
    "stream_options", "tools", "tool_choice", "parallel_tool_calls", "previous_response_id", "store", "reasoning",
    "text", "include", "metadata", "user", "safety_identifier", "prompt_cache_key", "prompt_cache_retention",
    "service_tier", "truncation", "background", "conversation", "prompt", "max_tool_calls",
    // CAI's extensions, as on /v1/chat/completions.
    "seed", "top_k", "min_p", "presence_penalty", "frequency_penalty", "repetition_penalty", "stop", "logit_bias",
    "ignore_eos", "max_reasoning_tokens", "speculative_method", "num_speculative_tokens", "client_metadata"};
// Extensions passed to the chat request unchanged.
constexpr std::array<std::string_view, 12> kPassThrough = {
    "seed", "top_k",      "min_p",      "presence_penalty",     "frequency_penalty",  "repetition_penalty",
    "stop", "logit_bias", "ignore_eos", "max_reasoning_tokens", "speculative_method", "num_speculative_tokens"};
// Tool types OpenAI runs on its own servers: this server has none of them.
constexpr std::array<std::string_view, 9> kHostedTools = {
    "web_search", "web_search_preview",   "file_search", "code_interpreter", "image_generation",
    "computer",   "computer_use_preview", "mcp",         "local_shell"};

template <size_t N>
bool one_of(const std::array<std::string_view, N>& names, std::string_view s) {
  for (std::string_view n : names)
    if (n == s) return true;
  return false;
}

bool is_set(const ordered_json* v) { return v && !v->is_null(); }

// The body's field `key`, or null when absent.
const ordered_json* field(const ordered_json& obj, const char* key) {
  auto it = obj.find(key);
  return it == obj.end() ? nullptr : &*it;
}

// The parameter type (a custom tool's freeform input) a custom tool is offered with.
ordered_json custom_tool_parameters() {
  return {{"type", "object"},
          {"properties", {{"input", {{"type", "string"}, {"description", "The tool's input, as free text."}}}}},
          {"required", {"input"}},
          {"additionalProperties", false}};
}

class Translator {
 public:
  Translator(ResponsesRequest& out, ApiError& error) : out_(out), error_(error) {}

  bool fail(std::string message, std::string param) {
    error_ = bad_request(std::move(message), std::move(param));
    return false;
  }
  bool string_field(const ordered_json& obj, const char* key, const std::string& param, std::string& out,
                    bool required) {
    const ordered_json* v = field(obj, key);
    if (!is_set(v)) return required ? fail(fmt::format("'{}' is required", param), param) : true;
    if (!v->is_string()) return fail(fmt::format("'{}' must be a string", param), param);
    out = v->get<std::string>();
    return true;
  }

  // The text of a message's content (a string or an array of parts); in a tool's output (`from_tool`), images and files
  // become notes.
  bool content_text(const ordered_json& content, const std::string& param, std::string& out, bool from_tool = false) {
    if (content.is_string()) return out = content.get<std::string>(), true;
    if (!content.is_array())
      return fail(fmt::format("'{}' must be a string or an array of content parts", param), param);
    for (size_t i = 0; i < content.size(); ++i) {
      const ordered_json& part = content[i];
      const std::string where = fmt::format("{}[{}]", param, i);
      std::string type, text;
      if (!part.is_object()) return fail(fmt::format("'{}' must be an object", where), where);
      if (!string_field(part, "type", where + ".type", type, true)) return false;
      if (type == "input_text" || type == "output_text" || type == "text") {
        if (!string_field(part, "text", where + ".text", text, true)) return false;
      } else if (type == "refusal") {
        if (!string_field(part, "refusal", where + ".refusal", text, true)) return false;
      } else if (from_tool && (type == "input_image" || type == "input_file")) {
        text = media_note(type.substr(6));
      } else if (type == "input_image" || type == "input_file" || type == "input_audio") {
        return fail(
            fmt::format("'{}': this model reads text only (content parts of type '{}' are not supported)", where, type),
            where + ".type");
      } else {
        return fail(fmt::format("'{}': content parts of type '{}' are not supported", where, type), where + ".type");
      }
      if (!out.empty() && !text.empty()) out += "\n\n";
      out += text;
    }
    return true;
  }

  bool input(const ordered_json& in) {
    if (in.is_string()) return push({{"role", "user"}, {"content", in.get<std::string>()}}), true;
    if (!in.is_array()) return fail("'input' must be a string or an array of input items", "input");
    for (size_t i = 0; i < in.size(); ++i)
      if (!item(in[i], fmt::format("input[{}]", i))) return false;
    return true;
  }

  bool add_tools(const ordered_json& tools, const std::string& param = "tools", const std::string& ns = {}) {
    if (!tools.is_array()) return fail(fmt::format("'{}' must be an array", param), param);
    for (size_t i = 0; i < tools.size(); ++i) {
      const ordered_json& t = tools[i];
      const std::string where = fmt::format("{}[{}]", param, i);
      std::string type, name, description;
      if (!t.is_object()) return fail(fmt::format("'{}' must be an object", where), where);
      if (!string_field(t, "type", where + ".type", type, true)) return false;
      if (one_of(kHostedTools, type)) {
        ignore_field(kRoute, fmt::format("{} of type {}", where, type), "a tool OpenAI runs on its own servers");
        continue;
      }
      if (type == "namespace" && ns.empty()) {
        const ordered_json* inner = field(t, "tools");
        if (!string_field(t, "name", where + ".name", name, true)) return false;
        if (!is_set(inner)) return fail(fmt::format("'{}.tools' is required", where), where + ".tools");
        if (!add_tools(*inner, where + ".tools", name)) return false;
        continue;
      }
      if (type != "function" && type != "custom")
        return fail(fmt::format("'{}': tools of type '{}' are not supported (function, custom and namespace tools "
                                "only)",
                                where, type),
                    where + ".type");
      if (!string_field(t, "name", where + ".name", name, true) ||
          !string_field(t, "description", where + ".description", description, false))
        return false;
      const std::string called = ns.empty() ? name : ns + "__" + name;
      ordered_json fn = {{"name", called}};
      if (!description.empty()) fn["description"] = description;
      if (type == "custom") {
        fn["parameters"] = custom_tool_parameters();
      } else {
        const ordered_json* params = field(t, "parameters");
        fn["parameters"] =
            is_set(params) ? *params : ordered_json{{"type", "object"}, {"properties", ordered_json::object()}};
        if (const ordered_json* strict = field(t, "strict"); is_set(strict)) fn["strict"] = *strict;
      }
      out_.tools[called] = {name, ns, type == "custom"};
      tool_index_[called] = chat_tools_.size();
      tool_paths_.push_back(where);
      chat_tools_.push_back({{"type", "function"}, {"function", std::move(fn)}});
    }
    return true;
  }

  // tool_choice: "auto" / "none" / "required", a function or custom tool by name, or allowed_tools (a subset, auto
  // or required).
  bool tool_choice(const ordered_json& choice, ordered_json& out) {
    if (choice.is_string()) return out = choice, true;
    if (!choice.is_object()) return fail("'tool_choice' must be a string or an object", "tool_choice");
    std::string type, name, mode = "auto";
    if (!string_field(choice, "type", "tool_choice.type", type, true)) return false;
    if (type == "function" || type == "custom") {
      std::string ns;
      if (!string_field(choice, "name", "tool_choice.name", name, true) ||
          !string_field(choice, "namespace", "tool_choice.namespace", ns, false))
        return false;
      out = {{"type", "function"}, {"function", {{"name", ns.empty() ? name : ns + "__" + name}}}};
      return true;
    }
    if (type != "allowed_tools")
      return fail(fmt::format("'tool_choice' of type '{}' names a tool OpenAI runs on its own servers; this server "
                              "offers function and custom tools only",
                              type),
                  "tool_choice.type");
    const ordered_json* allowed = field(choice, "tools");
    if (!is_set(allowed) || !allowed->is_array())
      return fail("'tool_choice.tools' must be an array of tools", "tool_choice.tools");
    if (!string_field(choice, "mode", "tool_choice.mode", mode, false)) return false;
    if (mode != "auto" && mode != "required")
      return fail(fmt::format("'tool_choice.mode' must be auto or required, not '{}'", mode), "tool_choice.mode");
    ordered_json kept = ordered_json::array();
    std::vector<std::string> kept_paths;
    for (const ordered_json& t : *allowed) {
      std::string n = t.is_object() ? t.value("name", std::string()) : std::string();
      if (const std::string ns = t.is_object() ? t.value("namespace", std::string()) : std::string(); !ns.empty())
        n = ns + "__" + n;
      auto it = tool_index_.find(n);
      if (it == tool_index_.end())
        return fail(fmt::format("'tool_choice.tools' names '{}', which is not among the request's tools", n),
                    "tool_choice.tools");
      kept.push_back(chat_tools_[it->second]);
      kept_paths.push_back(tool_paths_[it->second]);
    }
    chat_tools_ = std::move(kept);
    tool_paths_ = std::move(kept_paths);
    out = mode;
    return true;
  }

  const ordered_json& chat_tools() const { return chat_tools_; }
  // The request field each of chat_tools() came from, e.g. "tools[2]" or "tools[4].tools[0]" (for error messages).
  const std::vector<std::string>& tool_paths() const { return tool_paths_; }

 private:
  void push(ordered_json m) { out_.conversation.push_back(std::move(m)); }

  // The assistant message a function call joins: the last message when it is the assistant's, else a new one.
  ordered_json& assistant_for_call() {
    ordered_json& conv = out_.conversation;
    if (conv.empty() || conv.back()["role"] != "assistant")
      conv.push_back({{"role", "assistant"}, {"content", nullptr}});
    ordered_json& m = conv.back();
    if (!m.contains("tool_calls")) m["tool_calls"] = ordered_json::array();
    return m;
  }

  bool item(const ordered_json& it, const std::string& where) {
    if (!it.is_object()) return fail(fmt::format("'{}' must be an object", where), where);
    std::string type = "message";
    if (!string_field(it, "type", where + ".type", type, false)) return false;
    if (type == "message") return message(it, where);
    if (type == "reasoning") return true;
    if (type == "function_call" || type == "custom_tool_call") return call(it, where, type == "custom_tool_call");
    if (type == "function_call_output" || type == "custom_tool_call_output") return call_output(it, where);
    if (type == "item_reference")
      return fail(fmt::format("'{}': item references are not supported; send the item itself, or continue a stored "
                              "response with previous_response_id",
                              where),
                  where + ".type");
    return fail(fmt::format("'{}': input items of type '{}' are not supported", where, type), where + ".type");
  }

  bool message(const ordered_json& it, const std::string& where) {
    std::string role;
    if (!string_field(it, "role", where + ".role", role, true)) return false;
    if (role == "developer") role = "system";
    if (role != "user" && role != "assistant" && role != "system")
      return fail(fmt::format("'{}.role' must be user, assistant, system or developer, not '{}'", where, role),
                  where + ".role");
    const ordered_json* content = field(it, "content");
    if (!is_set(content)) return fail(fmt::format("'{}.content' is required", where), where + ".content");
    std::string text;
    if (!content_text(*content, where + ".content", text)) return false;
    push({{"role", role}, {"content", text}});
    return true;
  }

  bool call(const ordered_json& it, const std::string& where, bool custom) {
    std::string call_id, name, arguments;
    if (!string_field(it, "call_id", where + ".call_id", call_id, true) ||
        !string_field(it, "name", where + ".name", name, true) ||
        !string_field(it, custom ? "input" : "arguments", where + (custom ? ".input" : ".arguments"), arguments, true))
      return false;
    std::string ns;
    if (!string_field(it, "namespace", where + ".namespace", ns, false)) return false;
    if (!ns.empty()) name = ns + "__" + name;
    if (custom) arguments = ordered_json{{"input", arguments}}.dump();
    assistant_for_call()["tool_calls"].push_back(
        {{"id", call_id}, {"type", "function"}, {"function", {{"name", name}, {"arguments", arguments}}}});
    call_ids_.insert(call_id);
    return true;
  }

  bool call_output(const ordered_json& it, const std::string& where) {
    std::string call_id, text;
    if (!string_field(it, "call_id", where + ".call_id", call_id, true)) return false;
    if (!call_ids_.contains(call_id))
      return fail(
          fmt::format("'{}.call_id' \"{}\" answers no earlier function_call in the conversation", where, call_id),
          where + ".call_id");
    const ordered_json* output = field(it, "output");
    if (!is_set(output)) return fail(fmt::format("'{}.output' is required", where), where + ".output");
    if (!content_text(*output, where + ".output", text, /*from_tool=*/true)) return false;
    push({{"role", "tool"}, {"tool_call_id", call_id}, {"content", text}});
    return true;
  }

 public:
  // The calls made earlier in a stored conversation, which this request's outputs may answer.
  void note_calls(const ordered_json& conversation) {
    for (const ordered_json& m : conversation)
      if (m.contains("tool_calls"))
        for (const ordered_json& c : m["tool_calls"]) call_ids_.insert(c["id"].get<std::string>());
  }

 private:
  ResponsesRequest& out_;
  ApiError& error_;
  std::set<std::string> call_ids_;
  ordered_json chat_tools_ = ordered_json::array();
  std::map<std::string, size_t> tool_index_;
  std::vector<std::string> tool_paths_;
};

// The chat messages a conversation runs as: one system message (the instructions, then every system and developer
// message in order) first, the rest in order.
ordered_json chat_messages(const std::string& instructions, const ordered_json& conversation) {
  std::string system = instructions;
  ordered_json rest = ordered_json::array();
  for (const ordered_json& m : conversation) {
    if (m["role"] != "system") {
      rest.push_back(m);
      continue;
    }
    const std::string& text = m["content"].get_ref<const std::string&>();
    if (!system.empty() && !text.empty()) system += "\n\n";
    system += text;
  }
  if (!system.empty()) rest.insert(rest.begin(), ordered_json{{"role", "system"}, {"content", system}});
  return rest;
}

// The request's parameter an error of the chat parser names.
std::string responses_param(const std::string& chat_param, const Translator& t) {
  static const std::map<std::string, std::string> renamed = {{"max_completion_tokens", "max_output_tokens"},
                                                             {"response_format", "text.format"},
                                                             {"reasoning_effort", "reasoning.effort"},
                                                             {"messages", "input"},
                                                             {"logprobs", "top_logprobs"}};
  if (auto it = renamed.find(chat_param); it != renamed.end()) return it->second;
  if (chat_param.starts_with("tools[")) {
    const size_t i = std::stoul(chat_param.substr(6));
    return i < t.tool_paths().size() ? t.tool_paths()[i] : "tools";
  }
  if (chat_param.starts_with("messages")) return "input";
  return chat_param;
}

// text.format → response_format: text (none), json_object, or json_schema {name, schema, strict, description}.
bool text_format(Translator& t, const ordered_json& text, ordered_json& chat) {
  if (!text.is_object()) return t.fail("'text' must be an object", "text");
  const ordered_json* format = field(text, "format");
  if (!is_set(format)) return true;
  std::string type;
  if (!format->is_object()) return t.fail("'text.format' must be an object", "text.format");
  if (!t.string_field(*format, "type", "text.format.type", type, true)) return false;
  if (type == "text") return true;
  if (type == "json_object") return chat["response_format"] = {{"type", "json_object"}}, true;
  if (type != "json_schema")
    return t.fail(fmt::format("'text.format.type' must be text, json_object or json_schema, not '{}'", type),
                  "text.format.type");
  ordered_json js = ordered_json::object();
  for (const char* key : {"name", "schema", "strict", "description"})
    if (const ordered_json* v = field(*format, key); is_set(v)) js[key] = *v;
  chat["response_format"] = {{"type", "json_schema"}, {"json_schema", std::move(js)}};
  return true;
}

// reasoning.effort → reasoning_effort ("xhigh" and "max": no budget).
bool reasoning(Translator& t, const ordered_json& r, ordered_json& chat) {
  if (!r.is_object()) return t.fail("'reasoning' must be an object", "reasoning");
  std::string effort;
  if (!t.string_field(r, "effort", "reasoning.effort", effort, false)) return false;
  if (!effort.empty() && effort != "xhigh" && effort != "max") chat["reasoning_effort"] = effort;
  return true;
}

}  // namespace

std::optional<ResponsesRequest> parse_responses_request(std::string_view body, ResponseStore& store, ApiError& error) {
  const std::optional<ordered_json> parsed = parse_body_object(body, error);
  if (!parsed) return std::nullopt;
  const ordered_json& doc = *parsed;
  ResponsesRequest out;
  Translator t(out, error);
  for (auto it = doc.begin(); it != doc.end(); ++it)
    if (!one_of(kKnown, it.key())) ignore_field(kRoute, it.key());
  for (const char* refused : {"conversation", "prompt"})
    if (const ordered_json* v = field(doc, refused); is_set(v)) {
      t.fail(fmt::format("'{}' is not supported by this server", refused), refused);
      return std::nullopt;
    }
  if (const ordered_json* bg = field(doc, "background"); is_set(bg) && *bg != false) {
    t.fail("'background' responses are not supported by this server: send the request and wait, or stream it",
           "background");
    return std::nullopt;
  }
  std::string instructions;
  if (!t.string_field(doc, "previous_response_id", "previous_response_id", out.previous_response_id, false) ||
      !t.string_field(doc, "instructions", "instructions", instructions, false))
    return std::nullopt;
  if (const ordered_json* s = field(doc, "store"); is_set(s)) {
    if (!s->is_boolean()) return t.fail("'store' must be a boolean", "store"), std::nullopt;
    out.store = s->get<bool>();
  }
  if (!out.previous_response_id.empty()) {
    std::optional<StoredResponse> prev = store.get(out.previous_response_id);
    if (!prev) {
      error = bad_request(fmt::format("Previous response with id '{}' not found.", out.previous_response_id),
                          "previous_response_id");
      error.code = "previous_response_not_found";
      return std::nullopt;
    }
    out.conversation = std::move(prev->conversation);
    t.note_calls(out.conversation);
  }
  const ordered_json* input = field(doc, "input");
  if (!is_set(input)) return t.fail("'input' is required", "input"), std::nullopt;
  if (!t.input(*input)) return std::nullopt;
  if (const ordered_json* tools = field(doc, "tools"); is_set(tools) && !t.add_tools(*tools)) return std::nullopt;

  ordered_json chat = {{"messages", chat_messages(instructions, out.conversation)}};
  if (const ordered_json* model = field(doc, "model"); is_set(model)) chat["model"] = *model;
  if (const ordered_json* v = field(doc, "max_output_tokens"); is_set(v)) chat["max_completion_tokens"] = *v;
  for (const char* key : {"temperature", "top_p", "stream", "parallel_tool_calls"})
    if (const ordered_json* v = field(doc, key); is_set(v)) chat[key] = *v;
  for (std::string_view key : kPassThrough)
    if (const ordered_json* v = field(doc, std::string(key).c_str()); is_set(v)) chat[std::string(key)] = *v;
  if (const ordered_json* v = field(doc, "top_logprobs"); is_set(v)) {
    chat["logprobs"] = true;
    chat["top_logprobs"] = *v;
  }
  ordered_json choice = "auto";
  if (const ordered_json* v = field(doc, "tool_choice"); is_set(v) && !t.tool_choice(*v, choice)) return std::nullopt;
  if (!t.chat_tools().empty()) {
    chat["tools"] = t.chat_tools();
    chat["tool_choice"] = choice;
  }
  if (const ordered_json* v = field(doc, "text"); is_set(v) && !text_format(t, *v, chat)) return std::nullopt;
  if (const ordered_json* v = field(doc, "reasoning"); is_set(v) && !reasoning(t, *v, chat)) return std::nullopt;
  std::optional<ApiRequest> api = parse_api_object(ApiKind::kChat, chat, error);
  if (!api) {
    error.param = responses_param(error.param, t);
    return std::nullopt;
  }
  out.api = std::move(*api);
  for (const std::string& path : t.tool_paths()) out.api.tool_schema_paths.push_back(path + ".parameters");

  ordered_json& s = out.settings;
  auto given = [&](const char* key, ordered_json fallback) {
    const ordered_json* v = field(doc, key);
    s[key] = is_set(v) ? *v : std::move(fallback);
  };
  given("instructions", nullptr);
  given("max_output_tokens", nullptr);
  given("temperature", 1.0);
  given("top_p", 1.0);
  given("tools", ordered_json::array());
  given("tool_choice", "auto");
  given("parallel_tool_calls", true);
  given("reasoning", {{"effort", nullptr}, {"summary", nullptr}});
  given("text", {{"format", {{"type", "text"}}}});
  given("metadata", ordered_json::object());
  given("truncation", "disabled");
  given("user", nullptr);
  given("top_logprobs", 0);
  s["store"] = out.store;
  s["previous_response_id"] =
      out.previous_response_id.empty() ? ordered_json(nullptr) : ordered_json(out.previous_response_id);
  s["background"] = false;
  s["service_tier"] = "default";
  return out;
}

}  // namespace cai::server
