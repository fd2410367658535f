// Anthropic Messages API request schema: field-by-field validation and the translation into OpenAI-form messages.
#include "server/anthropic/anthropic_request.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <set>
#include <string>
#include <vector>

#include "server/ignored_fields.h"
#include "server/media_note.h"
#include "server/openai/response_format.h"
#include "server/tools/tool_calls.h"

namespace cai::server {

// Ordered, so that tool schemas and tool_use inputs keep the client's key order (a schema's properties are generated
// in that order when a call is forced).
using nlohmann::ordered_json;

namespace {

// Most stop_sequences one request may give.
constexpr size_t kMaxStopSequences = 64;

// Records the first error; every check returns false once it failed.
class Checker {
 public:
  explicit Checker(ApiError& error) : error_(error) {}
  bool fail(std::string message, std::string param) {
    if (!failed_) error_ = bad_request(std::move(message), std::move(param));
    failed_ = true;
    return false;
  }
  bool failed() const { return failed_; }

  // The keys of `obj` outside `known` are ignored (ignore_field); never fails.
  bool only_keys(const ordered_json& obj, std::initializer_list<std::string_view> known, const std::string& where) {
    for (auto it = obj.begin(); it != obj.end(); ++it)
      if (std::find(known.begin(), known.end(), it.key()) == known.end())
        ignore_field("anthropic", where.empty() ? it.key() : where + "." + it.key());
    return true;
  }
  // obj[key] as a string (required or not); false when present with another type.
  bool string(const ordered_json& obj, const char* key, std::string& out, const std::string& param, bool required) {
    auto it = obj.find(key);
    if (it == obj.end() || it->is_null()) return required ? fail(fmt::format("'{}' is required", param), param) : true;
    if (!it->is_string()) return fail(fmt::format("'{}' must be a string", param), param);
    out = it->get<std::string>();
    return true;
  }
  // obj[key] as an integer in [lo, hi] (an integral float such as 5.0 is accepted); `given` says whether it was there.
  bool integer(const ordered_json& obj, const char* key, const std::string& param, int64_t& out, int64_t lo, int64_t hi,
               bool& given) {
    auto it = obj.find(key);
    given = it != obj.end() && !it->is_null();
    if (!given) return true;
    const double d = it->is_number() ? it->get<double>() : NAN;
    if (!it->is_number() || (it->is_number_float() && (std::floor(d) != d || std::fabs(d) > 9.0e18)))
      return fail(fmt::format("'{}' must be an integer", param), param);
    const bool too_big =
        it->is_number_unsigned() && it->get<uint64_t>() > uint64_t(std::numeric_limits<int64_t>::max());
    out = too_big ? hi : it->is_number_float() ? static_cast<int64_t>(d) : it->get<int64_t>();
    if (too_big || out < lo || out > hi)
      return fail(fmt::format("'{}' must be between {} and {}", param, lo, hi), param);
    return true;
  }
  // A number in [lo, hi] ((lo, hi] with lo_open).
  bool number(const ordered_json& obj, const char* key, float& out, double lo, double hi, bool lo_open = false) {
    auto it = obj.find(key);
    if (it == obj.end() || it->is_null()) return true;
    if (!it->is_number()) return fail(fmt::format("'{}' must be a number", key), key);
    const double d = it->get<double>();
    if (!(d >= lo && d <= hi) || (lo_open && d == lo))
      return fail(fmt::format("'{}' must be in {}{}, {}]", key, lo_open ? "(" : "[", lo, hi), key);
    out = static_cast<float>(d);
    return true;
  }

 private:
  ApiError& error_;
  bool failed_ = false;
};

// The text of `content`: a string, or an array of text blocks joined by blank lines. `param` names the field. In a
// tool's result (`from_tool`), image and document blocks become notes (media_note.h).
bool text_of(Checker& c, const ordered_json& content, const std::string& param, std::string& out,
             bool from_tool = false) {
  if (content.is_string()) return out = content.get<std::string>(), true;
  if (!content.is_array()) return c.fail(fmt::format("'{}' must be a string or an array of text blocks", param), param);
  for (size_t i = 0; i < content.size(); ++i) {
    const ordered_json& block = content[i];
    const std::string where = fmt::format("{}[{}]", param, i);
    const ordered_json type = block.is_object() ? block.value("type", ordered_json()) : ordered_json();
    std::string text;
    if (from_tool && (type == "image" || type == "document")) {
      text = media_note(type.get<std::string>());
    } else if (type != "text") {
      return c.fail(fmt::format("'{}' must be a text block ({{\"type\": \"text\", \"text\": ...}})", where), where);
    } else if (!c.only_keys(block, {"type", "text", "cache_control", "citations"}, where) ||
               !c.string(block, "text", text, where + ".text", true)) {
      return false;
    }
    if (!out.empty()) out += "\n\n";
    out += text;
  }
  return true;
}

// Message translation, with the tool_use ids seen so far (a tool_result must answer one of them).
class MessageTranslator {
 public:
  MessageTranslator(Checker& c, ordered_json& out) : c_(c), out_(out) {}

  // The top-level system prompt, and each role "system" message (as Claude Code sends mid-conversation), joined into
  // the one system message in their order.
  bool system(const ordered_json& s, const std::string& param) {
    std::string text;
    if (!text_of(c_, s, param, text)) return false;
    if (text.empty()) return true;
    if (!out_.empty() && out_[0]["role"] == "system")
      out_[0]["content"] = out_[0]["content"].get<std::string>() + "\n\n" + text;
    else
      out_.insert(out_.begin(), ordered_json{{"role", "system"}, {"content", text}});
    return true;
  }

  bool message(const ordered_json& m, size_t index) {
    const std::string where = fmt::format("messages[{}]", index);
    if (!m.is_object()) return c_.fail(fmt::format("'{}' must be an object", where), where);
    std::string role;
    if (!c_.only_keys(m, {"role", "content"}, where) || !c_.string(m, "role", role, where + ".role", true))
      return false;
    if (role != "user" && role != "assistant" && role != "system")
      return c_.fail(fmt::format("'{}.role' must be \"user\", \"assistant\" or \"system\", not \"{}\"", where, role),
                     where + ".role");
    auto content = m.find("content");
    if (content == m.end() || content->is_null())
      return c_.fail(fmt::format("'{}.content' is required", where), where + ".content");
    if (role == "system") return system(*content, where + ".content");
    if (content->is_string()) return out_.push_back({{"role", role}, {"content", content->get<std::string>()}}), true;
    if (!content->is_array())
      return c_.fail(fmt::format("'{}.content' must be a string or an array of content blocks", where),
                     where + ".content");
    return role == "user" ? user_blocks(*content, where + ".content") : assistant_blocks(*content, where + ".content");
  }

 private:
  // The block's type after checking it is an object with a string type.
  bool block_type(const ordered_json& block, const std::string& where, std::string& type) {
    if (!block.is_object()) return c_.fail(fmt::format("'{}' must be a content block object", where), where);
    return c_.string(block, "type", type, where + ".type", true);
  }
  bool unsupported(const std::string& type, const std::string& where, const char* role) {
    return c_.fail(fmt::format("'{}': content blocks of type '{}' are not supported in {} messages", where, type, role),
                   where + ".type");
  }

  // Text blocks gather into one user message; each tool_result becomes a "tool" message, in order.
  bool user_blocks(const ordered_json& blocks, const std::string& param) {
    std::string text;
    bool have_text = false;
    auto flush = [&] {
      if (have_text) out_.push_back({{"role", "user"}, {"content", text}});
      text.clear();
      have_text = false;
    };
    for (size_t i = 0; i < blocks.size(); ++i) {
      const ordered_json& b = blocks[i];
      const std::string where = fmt::format("{}[{}]", param, i);
      std::string type;
      if (!block_type(b, where, type)) return false;
      if (type == "text") {
        std::string piece;
        if (!c_.only_keys(b, {"type", "text", "cache_control", "citations"}, where) ||
            !c_.string(b, "text", piece, where + ".text", true))
          return false;
        if (have_text) text += "\n\n";
        text += piece;
        have_text = true;
      } else if (type == "tool_result") {
        ordered_json tool;
        if (!tool_result(b, where, tool)) return false;
        flush();
        out_.push_back(std::move(tool));
      } else {
        return unsupported(type, where, "user");
      }
    }
    flush();
    return true;
  }

  bool tool_result(const ordered_json& b, const std::string& where, ordered_json& out) {
    std::string id, text;
    if (!c_.only_keys(b, {"type", "tool_use_id", "content", "is_error", "cache_control"}, where) ||
        !c_.string(b, "tool_use_id", id, where + ".tool_use_id", true))
      return false;
    if (!tool_use_ids_.contains(id))
      return c_.fail(fmt::format("'{}.tool_use_id' \"{}\" answers no earlier tool_use block", where, id),
                     where + ".tool_use_id");
    auto content = b.find("content");
    if (content != b.end() && !content->is_null() && !text_of(c_, *content, where + ".content", text, true))
      return false;
    auto is_error = b.find("is_error");
    if (is_error != b.end() && !is_error->is_null() && !is_error->is_boolean())
      return c_.fail(fmt::format("'{}.is_error' must be a boolean", where), where + ".is_error");
    if (is_error != b.end() && is_error->is_boolean() && is_error->get<bool>()) text = "Error: " + text;
    out = {{"role", "tool"}, {"tool_call_id", id}, {"content", text}};
    return true;
  }

  // Text blocks join into the content, tool_use blocks become tool_calls, thinking blocks are dropped.
  bool assistant_blocks(const ordered_json& blocks, const std::string& param) {
    std::string text;
    ordered_json calls = ordered_json::array();
    for (size_t i = 0; i < blocks.size(); ++i) {
      const ordered_json& b = blocks[i];
      const std::string where = fmt::format("{}[{}]", param, i);
      std::string type, piece;
      if (!block_type(b, where, type)) return false;
      if (type == "text") {
        if (!c_.only_keys(b, {"type", "text", "cache_control", "citations"}, where) ||
            !c_.string(b, "text", piece, where + ".text", true))
          return false;
        if (!text.empty() && !piece.empty()) text += "\n\n";
        text += piece;
      } else if (type == "tool_use") {
        ordered_json call;
        if (!tool_use(b, where, call)) return false;
        calls.push_back(std::move(call));
      } else if (type == "thinking") {
        std::string signature;
        if (!c_.only_keys(b, {"type", "thinking", "signature", "cache_control"}, where) ||
            !c_.string(b, "thinking", piece, where + ".thinking", true) ||
            !c_.string(b, "signature", signature, where + ".signature", false))
          return false;
      } else if (type == "redacted_thinking") {
        if (!c_.only_keys(b, {"type", "data", "cache_control"}, where) ||
            !c_.string(b, "data", piece, where + ".data", true))
          return false;
      } else {
        return unsupported(type, where, "assistant");
      }
    }
    ordered_json m = {{"role", "assistant"}, {"content", text}};
    if (!calls.empty()) {
      if (text.empty()) m["content"] = nullptr;
      m["tool_calls"] = std::move(calls);
    }
    out_.push_back(std::move(m));
    return true;
  }

  bool tool_use(const ordered_json& b, const std::string& where, ordered_json& call) {
    std::string id, name;
    if (!c_.only_keys(b, {"type", "id", "name", "input", "cache_control"}, where) ||
        !c_.string(b, "id", id, where + ".id", true) || !c_.string(b, "name", name, where + ".name", true))
      return false;
    if (id.empty()) return c_.fail(fmt::format("'{}.id' must not be empty", where), where + ".id");
    auto input = b.find("input");
    if (input == b.end() || !input->is_object())
      return c_.fail(fmt::format("'{}.input' must be an object", where), where + ".input");
    tool_use_ids_.insert(id);
    call = {{"id", id}, {"type", "function"}, {"function", {{"name", name}, {"arguments", input->dump()}}}};
    return true;
  }

  Checker& c_;
  ordered_json& out_;
  std::set<std::string> tool_use_ids_;
};

// The messages in OpenAI form; a final assistant message (prefill) becomes the text the answer continues.
bool read_messages(Checker& c, const ordered_json& doc, ApiRequest& req) {
  ordered_json& out = req.messages;
  out = ordered_json::array();
  MessageTranslator t(c, out);
  if (auto s = doc.find("system"); s != doc.end() && !s->is_null() && !t.system(*s, "system")) return false;
  auto msgs = doc.find("messages");
  if (msgs == doc.end() || msgs->is_null()) return c.fail("'messages' is required", "messages");
  if (!msgs->is_array() || msgs->empty()) return c.fail("'messages' must be a non-empty array", "messages");
  for (size_t i = 0; i < msgs->size(); ++i)
    if (!t.message((*msgs)[i], i)) return false;
  if (out.empty() || out.back()["role"] != "assistant") return true;
  if (out.back().contains("tool_calls"))
    return c.fail("a final assistant message is continued as text: it cannot hold tool_use blocks", "messages");
  req.assistant_prefill = out.back()["content"].get<std::string>();
  out.erase(out.size() - 1);
  return true;
}

bool read_tools(Checker& c, const ordered_json& doc, ApiRequest& req) {
  auto tools = doc.find("tools");
  if (tools == doc.end() || tools->is_null()) return true;
  if (!tools->is_array()) return c.fail("'tools' must be an array", "tools");
  std::set<std::string> names;
  for (size_t i = 0; i < tools->size(); ++i) {
    const ordered_json& t = (*tools)[i];
    const std::string where = fmt::format("tools[{}]", i);
    if (!t.is_object()) return c.fail(fmt::format("'{}' must be an object", where), where);
    std::string type = "custom", name, description;
    if (!c.string(t, "type", type, where + ".type", false)) return false;
    if (type != "custom")
      return c.fail(fmt::format("'{}': tools of type '{}' are not supported (custom tools with an input_schema only)",
                                where, type),
                    where + ".type");
    if (!c.only_keys(t,
                     {"type", "name", "description", "input_schema", "cache_control", "strict", "eager_input_streaming",
                      "input_examples", "defer_loading"},
                     where) ||
        !c.string(t, "name", name, where + ".name", true) ||
        !c.string(t, "description", description, where + ".description", false))
      return false;
    if (!is_valid_tool_name(name))
      return c.fail(fmt::format("'{}.name' must be 1 to 64 letters, digits, '_' or '-', not \"{}\"", where, name),
                    where + ".name");
    if (!names.insert(name).second)
      return c.fail(fmt::format("'{}.name': the tool name \"{}\" is used twice", where, name), where + ".name");
    auto schema = t.find("input_schema");
    if (schema == t.end() || !schema->is_object() || schema->value("type", ordered_json()) != "object")
      return c.fail(fmt::format("'{}.input_schema' must be a JSON schema object with \"type\": \"object\"", where),
                    where + ".input_schema");
    ordered_json function = {{"name", name}};
    if (!description.empty()) function["description"] = description;
    function["parameters"] = *schema;
    req.tools.push_back({{"type", "function"}, {"function", std::move(function)}});
    req.tool_schema_paths.push_back(where + ".input_schema");
  }
  return true;
}

bool read_tool_choice(Checker& c, const ordered_json& doc, ApiRequest& req) {
  auto tc = doc.find("tool_choice");
  if (tc == doc.end() || tc->is_null()) return true;
  if (!tc->is_object()) return c.fail("'tool_choice' must be an object such as {\"type\": \"auto\"}", "tool_choice");
  std::string type, name;
  if (!c.only_keys(*tc, {"type", "name", "disable_parallel_tool_use"}, "tool_choice") ||
      !c.string(*tc, "type", type, "tool_choice.type", true))
    return false;
  auto no_parallel = tc->find("disable_parallel_tool_use");
  if (no_parallel != tc->end() && !no_parallel->is_null()) {
    if (!no_parallel->is_boolean())
      return c.fail("'tool_choice.disable_parallel_tool_use' must be a boolean",
                    "tool_choice.disable_parallel_tool_use");
    req.parallel_tool_calls = !no_parallel->get<bool>();
  }
  if (type == "auto" || type == "none") {
    req.tool_choice = type == "auto" ? ToolChoice::kAuto : ToolChoice::kNone;
  } else if (type == "any" || type == "tool") {
    if (req.tools.empty()) return c.fail(fmt::format("tool_choice \"{}\" needs 'tools'", type), "tool_choice");
    if (type == "any") {
      req.tool_choice = ToolChoice::kRequired;
    } else {
      if (!c.string(*tc, "name", name, "tool_choice.name", true)) return false;
      const bool known = std::any_of(req.tools.begin(), req.tools.end(),
                                     [&](const ordered_json& t) { return t["function"]["name"] == name; });
      if (!known)
        return c.fail(fmt::format("tool_choice names \"{}\", which is not in 'tools'", name), "tool_choice.name");
      req.tool_choice = ToolChoice::kFunction;
      req.tool_choice_name = name;
    }
  } else {
    return c.fail(fmt::format("'tool_choice.type' must be auto, any, tool or none, not \"{}\"", type),
                  "tool_choice.type");
  }
  if (type != "tool" && tc->contains("name") && !(*tc)["name"].is_null())
    return c.fail("'tool_choice.name' is only allowed with type \"tool\"", "tool_choice.name");
  return true;
}

// thinking {"type": "enabled", "budget_tokens": N} → a reasoning budget of N; {"type": "disabled"} → 0;
// {"type": "adaptive"} → the model decides, within output_config.effort's budget if given (else none). `display`
// (summarized / omitted) is accepted: CAI always returns the reasoning it generated.
bool read_thinking(Checker& c, const ordered_json& doc, ApiRequest& req) {
  auto th = doc.find("thinking");
  if (th == doc.end() || th->is_null()) return true;
  if (!th->is_object()) return c.fail("'thinking' must be an object", "thinking");
  std::string type, display;
  if (!c.only_keys(*th, {"type", "budget_tokens", "display"}, "thinking") ||
      !c.string(*th, "type", type, "thinking.type", true) ||
      !c.string(*th, "display", display, "thinking.display", false))
    return false;
  if (type == "adaptive") return true;
  if (type == "disabled") {
    if (th->contains("budget_tokens")) return c.fail("'thinking.budget_tokens' needs type \"enabled\"", "thinking");
    req.max_reasoning_tokens = 0;
    return true;
  }
  if (type != "enabled")
    return c.fail(fmt::format("'thinking.type' must be \"enabled\", \"adaptive\" or \"disabled\", not \"{}\"", type),
                  "thinking.type");
  int64_t budget = 0;
  bool given = false;
  if (!c.integer(*th, "budget_tokens", "thinking.budget_tokens", budget, kMinThinkingBudget,
                 std::numeric_limits<int32_t>::max(), given))
    return false;
  if (!given) return c.fail("'thinking.budget_tokens' is required with type \"enabled\"", "thinking.budget_tokens");
  if (req.max_tokens && budget >= *req.max_tokens)
    return c.fail(
        fmt::format("'thinking.budget_tokens' ({}) must be less than 'max_tokens' ({})", budget, *req.max_tokens),
        "thinking.budget_tokens");
  req.max_reasoning_tokens = static_cast<int>(budget);
  return true;
}

// output_config {"effort": low | medium | high | max} → a reasoning budget (512, 2048, 8192 tokens; max: none) where
// thinking set none; {"format": {"type": "json_schema", "schema": {...}}} → structured output, as response_format.
bool read_output_config(Checker& c, const ordered_json& doc, bool thinking_budget_given, ApiRequest& req) {
  auto oc = doc.find("output_config");
  if (oc == doc.end() || oc->is_null()) return true;
  if (!oc->is_object()) return c.fail("'output_config' must be an object", "output_config");
  std::string effort;
  if (!c.only_keys(*oc, {"effort", "format"}, "output_config") ||
      !c.string(*oc, "effort", effort, "output_config.effort", false))
    return false;
  if (!effort.empty()) {
    const int budget = effort == "max" ? -1 : reasoning_budget_for(effort);
    if (budget < -1 || effort == "none" || effort == "minimal")
      return c.fail(fmt::format("'output_config.effort' must be low, medium, high or max, not \"{}\"", effort),
                    "output_config.effort");
    if (!thinking_budget_given) req.max_reasoning_tokens = budget;
  }
  auto format = oc->find("format");
  if (format == oc->end() || format->is_null()) return true;
  if (!format->is_object() || format->value("type", ordered_json()) != "json_schema" || !format->contains("schema"))
    return c.fail("'output_config.format' must be {\"type\": \"json_schema\", \"schema\": {...}}",
                  "output_config.format");
  c.only_keys(*format, {"type", "schema"}, "output_config.format");
  const ordered_json response_format = {{"type", "json_schema"},
                                        {"json_schema", {{"name", "output"}, {"schema", (*format)["schema"]}}}};
  Result<std::shared_ptr<const grammar::Grammar>> g = parse_response_format(response_format);
  if (!g.ok()) return c.fail("'output_config.format': " + g.status().message(), "output_config.format");
  req.response_format = std::move(g).value();
  return true;
}

// Anthropic refuses thinking together with a tool_choice that forces a call; so does this route, in its words.
bool check_thinking_with_forced_tool(Checker& c, const ordered_json& doc, const ApiRequest& req) {
  auto th = doc.find("thinking");
  const bool thinking = th != doc.end() && th->is_object() && th->value("type", "") != "disabled";
  if (thinking && (req.tool_choice == ToolChoice::kRequired || req.tool_choice == ToolChoice::kFunction))
    return c.fail("Thinking may not be enabled when tool_choice forces tool use.", "tool_choice");
  return true;
}

// Fields accepted with no effect here: context_management (CAI edits no context), container and inference_geo;
// mcp_servers only when empty (this server connects to no MCP server).
bool read_accepted_fields(Checker& c, const ordered_json& doc) {
  auto mcp = doc.find("mcp_servers");
  if (mcp != doc.end() && !mcp->is_null() && !(mcp->is_array() && mcp->empty()))
    return c.fail("'mcp_servers': this server does not connect to MCP servers (give the tools in 'tools')",
                  "mcp_servers");
  return true;
}

bool read_stop_sequences(Checker& c, const ordered_json& doc, ApiRequest& api) {
  auto s = doc.find("stop_sequences");
  if (s == doc.end() || s->is_null()) return true;
  if (!s->is_array() || s->size() > kMaxStopSequences)
    return c.fail(fmt::format("'stop_sequences' must be an array of at most {} strings", kMaxStopSequences),
                  "stop_sequences");
  for (const ordered_json& x : *s) {
    if (!x.is_string() || x.get<std::string>().empty())
      return c.fail("each of 'stop_sequences' must be a non-empty string", "stop_sequences");
    api.stop.push_back(x.get<std::string>());
  }
  return true;
}

bool read_scalars(Checker& c, const ordered_json& doc, AnthropicRoute route, ApiRequest& api) {
  if (!c.string(doc, "model", api.model, "model", /*required=*/false)) return false;
  int64_t v = 0;
  bool given = false;
  if (!c.integer(doc, "max_tokens", "max_tokens", v, 1, std::numeric_limits<int32_t>::max(), given)) return false;
  if (given)
    api.max_tokens = static_cast<int>(v);
  else if (route == AnthropicRoute::kMessages)
    return c.fail("'max_tokens' is required", "max_tokens");
  SamplingParams& s = api.sampling;
  if (!c.number(doc, "temperature", s.temperature, 0.0, kAnthropicMaxTemperature) ||
      !c.number(doc, "top_p", s.top_p, 0.0, 1.0, /*lo_open=*/true) ||
      !c.integer(doc, "top_k", "top_k", v, 0, 1 << 20, given))
    return false;
  if (given) s.top_k = static_cast<int>(v);
  if (auto stream = doc.find("stream"); stream != doc.end() && !stream->is_null()) {
    if (!stream->is_boolean()) return c.fail("'stream' must be a boolean", "stream");
    api.stream = stream->get<bool>();
  }
  if (auto meta = doc.find("metadata"); meta != doc.end() && !meta->is_null() && !meta->is_object())
    return c.fail("'metadata' must be an object", "metadata");
  return true;
}

}  // namespace

std::optional<ApiRequest> parse_anthropic_request(AnthropicRoute route, std::string_view body, ApiError& error) {
  const std::optional<ordered_json> parsed = parse_body_object(body, error);
  if (!parsed) return std::nullopt;
  const ordered_json& doc = *parsed;
  ApiRequest req;
  req.kind = ApiKind::kChat;
  Checker c(error);
  const bool ok = c.only_keys(doc,
                              {"model", "messages", "system", "max_tokens", "stop_sequences", "temperature", "top_p",
                               "top_k", "tools", "tool_choice", "thinking", "metadata", "stream", "service_tier",
                               "output_config", "context_management", "container", "mcp_servers", "inference_geo"},
                              "") &&
                  read_scalars(c, doc, route, req) && read_messages(c, doc, req) && read_stop_sequences(c, doc, req) &&
                  read_tools(c, doc, req) && read_tool_choice(c, doc, req) && read_thinking(c, doc, req) &&
                  read_output_config(c, doc, req.max_reasoning_tokens != -1, req) && read_accepted_fields(c, doc) &&
                  check_thinking_with_forced_tool(c, doc, req);
  if (!ok) return std::nullopt;
  return req;
}

}  // namespace cai::server
