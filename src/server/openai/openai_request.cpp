// OpenAI request schema: field-by-field validation of chat and completion bodies.
#include "server/openai/openai_request.h"
#include "server/openai/response_format.h"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <limits>

#include "server/tools/tool_request.h"

namespace cai::server {

using nlohmann::json;

ApiError bad_request(std::string message, std::string param) {
  ApiError e;
  e.message = std::move(message);
  e.param = std::move(param);
  return e;
}

std::optional<nlohmann::ordered_json> parse_body_object(std::string_view body, ApiError& error) {
  if (body.find('\0') != std::string_view::npos) {
    error = bad_request("the request body is not valid JSON (it holds a NUL byte)");
    return std::nullopt;
  }
  nlohmann::ordered_json doc = nlohmann::ordered_json::parse(body.begin(), body.end(), nullptr, false);
  if (doc.is_discarded() || !doc.is_object()) {
    error = bad_request(doc.is_discarded() ? "the request body is not valid JSON"
                                           : "the request body must be a JSON object");
    return std::nullopt;
  }
  return doc;
}

json error_json(const ApiError& e) {
  json err = {{"message", e.message}, {"type", e.type}, {"param", nullptr}, {"code", nullptr}};
  if (!e.param.empty()) err["param"] = e.param;
  if (!e.code.empty()) err["code"] = e.code;
  return {{"error", std::move(err)}};
}

int reasoning_budget_for(std::string_view effort) {
  if (effort == "none") return 0;
  if (effort == "minimal") return 256;
  if (effort == "low") return 512;
  if (effort == "medium") return 2048;
  if (effort == "high") return 8192;
  return -2;
}

namespace {

// Parameters of either endpoint that change nothing here and are accepted whatever their value.
constexpr std::array<std::string_view, 9> kIgnored = {
    "user",      "metadata",  "store", "service_tier", "parallel_tool_calls", "prompt_cache_key", "safety_identifier",
    "verbosity", "modalities"};
// OpenAI parameters this server cannot honour: accepted only when null or empty.
constexpr std::array<std::string_view, 8> kUnsupported = {"tools", "tool_choice", "functions",          "function_call",
                                                          "audio", "prediction",  "web_search_options", "suffix"};

template <size_t N>
bool contains(const std::array<std::string_view, N>& names, std::string_view key) {
  for (std::string_view n : names)
    if (n == key) return true;
  return false;
}

// Reads typed fields of the request object, recording the first error.
class FieldReader {
 public:
  FieldReader(const json& obj, ApiError& error) : obj_(obj), error_(error) {}
  bool failed() const { return failed_; }

  // The value of `key`, or null when absent/null.
  const json* get(const char* key) const {
    auto it = obj_.find(key);
    return it == obj_.end() || it->is_null() ? nullptr : &*it;
  }
  void fail(std::string message, std::string param) {
    if (failed_) return;
    failed_ = true;
    error_ = bad_request(std::move(message), std::move(param));
  }
  void number(const char* key, float& out, double lo, double hi, bool lo_open = false) {
    const json* v = get(key);
    if (!v) return;
    if (!v->is_number()) return fail(fmt::format("'{}' must be a number", key), key);
    const double d = v->get<double>();
    if (!(d >= lo && d <= hi) || (lo_open && d == lo))
      return fail(fmt::format("'{}' must be in {}{}, {}]", key, lo_open ? "(" : "[", lo, hi), key);
    out = static_cast<float>(d);
  }
  // Integers; a float with an integral value (5.0) is accepted as Python clients may send it.
  bool integer(const char* key, int64_t& out, int64_t lo, int64_t hi) {
    const json* v = get(key);
    if (!v) return false;
    double d = 0;
    if (v->is_number_integer()) {
      if (v->is_number_unsigned() && v->get<uint64_t>() > uint64_t(std::numeric_limits<int64_t>::max()))
        return fail(fmt::format("'{}' is out of range", key), key), false;
      out = v->get<int64_t>();
    } else if (v->is_number_float() && (d = v->get<double>(), std::floor(d) == d) && std::fabs(d) < 9.0e18) {
      out = static_cast<int64_t>(d);
    } else {
      return fail(fmt::format("'{}' must be an integer", key), key), false;
    }
    if (out < lo || out > hi) return fail(fmt::format("'{}' must be between {} and {}", key, lo, hi), key), false;
    return true;
  }
  bool boolean(const char* key, bool& out) {
    const json* v = get(key);
    if (!v) return false;
    if (!v->is_boolean()) return fail(fmt::format("'{}' must be a boolean", key), key), false;
    out = v->get<bool>();
    return true;
  }
  void string(const char* key, std::string& out) {
    const json* v = get(key);
    if (!v) return;
    if (!v->is_string()) return fail(fmt::format("'{}' must be a string", key), key);
    out = v->get<std::string>();
  }

 private:
  const json& obj_;
  ApiError& error_;
  bool failed_ = false;
};

// Text of a message's content: a string, or an array of {"type": "text", "text": ...} parts joined together.
bool content_text(const json& content, std::string& out, FieldReader& r, const std::string& param) {
  if (content.is_null()) return true;
  if (content.is_string()) return out = content.get<std::string>(), true;
  if (!content.is_array()) return r.fail("message content must be a string or an array of content parts", param), false;
  for (const json& part : content) {
    if (!part.is_object()) return r.fail("each content part must be an object", param), false;
    auto type = part.find("type");
    if (type == part.end() || !type->is_string()) return r.fail("each content part needs a 'type'", param), false;
    if (*type != "text")
      return r.fail(fmt::format("content parts of type '{}' are not supported (text only)", type->get<std::string>()),
                    param),
             false;
    auto text = part.find("text");
    if (text == part.end() || !text->is_string())
      return r.fail("a text content part needs a string 'text'", param), false;
    out += text->get<std::string>();
  }
  return true;
}

void read_messages(FieldReader& r, ApiRequest& req) {
  const json* msgs = r.get("messages");
  if (!msgs) return r.fail("'messages' is required", "messages");
  if (!msgs->is_array() || msgs->empty()) return r.fail("'messages' must be a non-empty array", "messages");
  req.messages = nlohmann::ordered_json::array();
  for (size_t i = 0; i < msgs->size(); ++i) {
    const json& m = (*msgs)[i];
    const std::string param = fmt::format("messages[{}]", i);
    if (!m.is_object()) return r.fail("each message must be an object", param);
    auto role = m.find("role");
    if (role == m.end() || !role->is_string()) return r.fail("each message needs a string 'role'", param + ".role");
    std::string role_name = role->get<std::string>();
    if (role_name == "developer") role_name = "system";  // OpenAI's newer name for the system role
    if (role_name != "system" && role_name != "user" && role_name != "assistant" && role_name != "tool")
      return r.fail(fmt::format("unknown role '{}'", role_name), param + ".role");
    std::string text;
    auto content = m.find("content");
    if (content != m.end() && !content_text(*content, text, r, param + ".content")) return;
    nlohmann::ordered_json out = {{"role", role_name}, {"content", text}};
    auto name = m.find("name");
    if (name != m.end() && name->is_string()) out["name"] = *name;
    if (auto e = read_message_tool_parts(m, role_name, param, out)) return r.fail(e->message, e->param);
    req.messages.push_back(std::move(out));
  }
}

// prompt: a string, a one-element array of strings, an array of token ids, or a one-element array of those.
void read_prompt(FieldReader& r, ApiRequest& req) {
  const json* p = r.get("prompt");
  if (!p) return r.fail("'prompt' is required", "prompt");
  if (p->is_string()) return void(req.prompt_text = p->get<std::string>());
  if (!p->is_array() || p->empty()) return r.fail("'prompt' must be a string or a non-empty array", "prompt");
  const json* ids = p;
  if ((*p)[0].is_string() || (*p)[0].is_array()) {
    if (p->size() != 1) return r.fail("only one prompt per request is supported", "prompt");
    if ((*p)[0].is_string()) return void(req.prompt_text = (*p)[0].get<std::string>());
    ids = &(*p)[0];
    if (ids->empty()) return r.fail("'prompt' token array is empty", "prompt");
  }
  for (const json& id : *ids) {
    if (!id.is_number_integer() || id.get<int64_t>() < 0 || id.get<int64_t>() > std::numeric_limits<int32_t>::max())
      return r.fail("'prompt' must be a string, or an array of token ids (non-negative integers)", "prompt");
    req.prompt_tokens.push_back(static_cast<int32_t>(id.get<int64_t>()));
  }
  req.prompt_is_tokens = true;
}

void read_stop(FieldReader& r, ApiRequest& req) {
  const json* s = r.get("stop");
  if (!s) return;
  if (s->is_string()) {
    if (!s->get<std::string>().empty()) req.stop.push_back(s->get<std::string>());
    return;
  }
  if (!s->is_array() || s->size() > 16)
    return r.fail("'stop' must be a string or an array of up to 16 strings", "stop");
  for (const json& x : *s) {
    if (!x.is_string() || x.get<std::string>().empty())
      return r.fail("each 'stop' entry must be a non-empty string", "stop");
    req.stop.push_back(x.get<std::string>());
  }
}

void read_sampling(FieldReader& r, ApiRequest& req) {
  SamplingParams& s = req.sampling;
  r.number("temperature", s.temperature, 0.0, 2.0);
  r.number("top_p", s.top_p, 0.0, 1.0, /*lo_open=*/true);
  r.number("min_p", s.min_p, 0.0, 1.0);
  r.number("presence_penalty", s.presence_penalty, -2.0, 2.0);
  r.number("frequency_penalty", s.frequency_penalty, -2.0, 2.0);
  r.number("repetition_penalty", s.repetition_penalty, 0.0, 10.0, /*lo_open=*/true);
  int64_t v = 0;
  if (r.integer("top_k", v, -1, 1 << 20)) s.top_k = v < 0 ? 0 : static_cast<int>(v);
  if (r.integer("seed", v, std::numeric_limits<int64_t>::min(), std::numeric_limits<int64_t>::max())) {
    s.seed = static_cast<uint64_t>(v);
    req.seed_given = true;
  }
}

void read_lengths_and_counts(FieldReader& r, ApiRequest& req) {
  int64_t v = 0;
  // max_tokens 0 asks for the prompt's logprobs only (echo), as lm-evaluation-harness scores continuations.
  const int64_t min_tokens = req.echo ? 0 : 1;
  if (r.integer("max_tokens", v, min_tokens, std::numeric_limits<int32_t>::max())) req.max_tokens = static_cast<int>(v);
  if (r.integer("max_completion_tokens", v, 1, std::numeric_limits<int32_t>::max()))
    req.max_tokens = static_cast<int>(v);
  if (r.integer("n", v, 1, kMaxChoices)) req.n = static_cast<int>(v);
  if (r.integer("best_of", v, 1, 128) && v != 1) r.fail("only best_of=1 is supported", "best_of");
}

void read_stream(FieldReader& r, ApiRequest& req) {
  r.boolean("stream", req.stream);
  const json* so = r.get("stream_options");
  if (!so) return;
  if (!so->is_object()) return r.fail("'stream_options' must be an object", "stream_options");
  if (!req.stream) return r.fail("'stream_options' is only allowed when 'stream' is true", "stream_options");
  for (auto it = so->begin(); it != so->end(); ++it) {
    if (it.key() == "include_usage") {
      if (!it->is_null() && !it->is_boolean())
        return r.fail("'stream_options.include_usage' must be a boolean", "stream_options.include_usage");
      req.include_usage = it->is_boolean() && it->get<bool>();
    } else if (it.key() != "include_obfuscation") {
      return r.fail(fmt::format("unknown stream option '{}'", it.key()), "stream_options");
    }
  }
}

void read_logprobs(FieldReader& r, ApiRequest& req) {
  int64_t v = 0;
  if (req.kind == ApiKind::kCompletion) {  // completions: logprobs is the number of alternatives (0..5)
    if (r.integer("logprobs", v, 0, 5)) req.top_logprobs = static_cast<int>(v);
    return;
  }
  bool want = false;
  r.boolean("logprobs", want);
  if (r.integer("top_logprobs", v, 0, 20)) {
    if (!want) return r.fail("'top_logprobs' requires 'logprobs' to be true", "top_logprobs");
    req.top_logprobs = static_cast<int>(v);
  } else if (want) {
    req.top_logprobs = 0;
  }
}

// {"token id": bias, ...}: keys are decimal token ids, biases in [-100, 100].
void read_logit_bias(FieldReader& r, ApiRequest& req) {
  const json* lb = r.get("logit_bias");
  if (!lb) return;
  if (!lb->is_object()) return r.fail("'logit_bias' must be an object mapping token ids to biases", "logit_bias");
  for (auto it = lb->begin(); it != lb->end(); ++it) {
    const std::string& key = it.key();
    const bool digits = !key.empty() && key.size() <= 10 && key.find_first_not_of("0123456789") == std::string::npos;
    if (!digits || std::stoll(key) > std::numeric_limits<int32_t>::max())
      return r.fail(fmt::format("logit_bias key '{}' is not a token id (a non-negative integer)", key), "logit_bias");
    if (!it->is_number() || !(it->get<double>() >= -100 && it->get<double>() <= 100))
      return r.fail(fmt::format("logit_bias['{}'] must be a number in [-100, 100]", key), "logit_bias");
    req.sampling.logit_bias.emplace_back(static_cast<int32_t>(std::stoll(key)), it->get<float>());
  }
  std::sort(req.sampling.logit_bias.begin(), req.sampling.logit_bias.end());  // by token id
}

void read_reasoning_budget(FieldReader& r, ApiRequest& req) {
  std::string effort;
  r.string("reasoning_effort", effort);
  if (!effort.empty()) {
    req.max_reasoning_tokens = reasoning_budget_for(effort);
    if (req.max_reasoning_tokens < -1)
      return r.fail(fmt::format("'reasoning_effort' must be one of none, minimal, low, medium, high; got '{}'", effort),
                    "reasoning_effort");
  }
  int64_t v = 0;
  if (r.integer("max_reasoning_tokens", v, 0, std::numeric_limits<int32_t>::max()))
    req.max_reasoning_tokens = static_cast<int>(v);  // wins over reasoning_effort
}

void read_speculation(FieldReader& r, ApiRequest& req) {
  std::string method;
  r.string("speculative_method", method);
  if (!method.empty()) {
    Result<SpecMethod> m = parse_spec_method(method);
    if (!m.ok())
      return r.fail(fmt::format("'speculative_method' must be one of off, ngram, mtp, draft; got '{}'", method),
                    "speculative_method");
    req.speculative_method = *m;
  }
  int64_t v = 0;
  if (r.integer("num_speculative_tokens", v, 0, SpecOptions::kMaxTokens)) req.speculative_tokens = static_cast<int>(v);
}

// Read from the ordered document: a schema's properties are generated in the order the client wrote them.
void read_response_format(FieldReader& r, ApiRequest& req, const nlohmann::ordered_json& doc) {
  const json* rf = r.get("response_format");
  if (!rf || rf->is_null()) return;
  Result<std::shared_ptr<const grammar::Grammar>> g = parse_response_format(doc.at("response_format"));
  if (!g.ok()) return r.fail(g.status().message(), "response_format");
  req.response_format = std::move(g).value();
}

bool is_empty_value(const json& v) { return v.is_null() || ((v.is_array() || v.is_object()) && v.empty()); }

// Rejects parameters that are neither known, ignorable, nor harmlessly empty.
void check_keys(FieldReader& r, const json& body, ApiKind kind) {
  static constexpr std::array<std::string_view, 25> kCommon = {"model",
                                                               "max_tokens",
                                                               "temperature",
                                                               "top_p",
                                                               "top_k",
                                                               "min_p",
                                                               "presence_penalty",
                                                               "frequency_penalty",
                                                               "repetition_penalty",
                                                               "seed",
                                                               "stop",
                                                               "stream",
                                                               "stream_options",
                                                               "logprobs",
                                                               "n",
                                                               "ignore_eos",
                                                               "best_of",
                                                               "echo",
                                                               "response_format",
                                                               "max_completion_tokens",
                                                               "logit_bias",
                                                               "reasoning_effort",
                                                               "max_reasoning_tokens",
                                                               "speculative_method",
                                                               "num_speculative_tokens"};
  for (auto it = body.begin(); it != body.end(); ++it) {
    const std::string& key = it.key();
    if (contains(kCommon, key) || contains(kIgnored, key)) continue;
    if (kind == ApiKind::kChat && (key == "messages" || key == "top_logprobs" || key == "tools" ||
                                   key == "tool_choice" || key == "parallel_tool_calls"))
      continue;
    if (kind == ApiKind::kCompletion && key == "prompt") continue;
    if (contains(kUnsupported, key)) {
      const bool harmless = is_empty_value(*it) || (key == "tool_choice" && *it == "none");
      if (!harmless) return r.fail(fmt::format("'{}' is not supported by this server", key), key);
      continue;
    }
    return r.fail(fmt::format("Unrecognized request argument supplied: {}", key), key);
  }
}

}  // namespace

std::optional<ApiRequest> parse_api_request(ApiKind kind, std::string_view body, ApiError& error) {
  const std::optional<nlohmann::ordered_json> parsed = parse_body_object(body, error);
  if (!parsed) return std::nullopt;
  return parse_api_object(kind, *parsed, error);
}

std::optional<ApiRequest> parse_api_object(ApiKind kind, const nlohmann::ordered_json& body, ApiError& error) {
  const json doc(body);
  ApiRequest req;
  req.kind = kind;
  FieldReader r(doc, error);
  check_keys(r, doc, kind);
  r.string("model", req.model);
  if (kind == ApiKind::kChat) {
    read_messages(r, req);
    if (auto e = read_tool_fields(doc, req)) r.fail(e->message, e->param);
  } else {
    read_prompt(r, req);
  }
  if (r.boolean("echo", req.echo) && req.echo && kind == ApiKind::kChat)
    r.fail("'echo' is a completions parameter (/v1/completions)", "echo");
  read_lengths_and_counts(r, req);
  read_sampling(r, req);
  read_stop(r, req);
  read_stream(r, req);
  read_logprobs(r, req);
  read_logit_bias(r, req);
  read_reasoning_budget(r, req);
  read_speculation(r, req);
  read_response_format(r, req, body);
  r.boolean("ignore_eos", req.ignore_eos);
  if (req.echo && req.top_logprobs >= 0 && req.n > 1)
    r.fail("'echo' with 'logprobs' scores the prompt once: ask for n = 1", "n");
  if (r.failed()) return std::nullopt;
  return req;
}

}  // namespace cai::server
