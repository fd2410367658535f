// OpenAI request schema: request JSON → a validated ApiRequest, or an ApiError naming the bad parameter.
#pragma once

#include <nlohmann/json.hpp>

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "runtime/grammar/grammar.h"
#include "runtime/sampler.h"
#include "runtime/spec/spec_options.h"

namespace cai::server {

enum class ApiKind { kChat, kCompletion };

// An error as OpenAI reports it: HTTP status + {"error": {"message", "type", "param", "code"}}.
struct ApiError {
  int http_status = 400;
  std::string message;
  std::string param;  // "" → null
  std::string type = "invalid_request_error";
  std::string code;  // "" → null
  // code "context_length_exceeded": the request's tokens (at least) and the most that fit, for the Anthropic shape's
  // wording (error_body).
  int64_t prompt_tokens = -1;
  int64_t context_tokens = -1;
};

ApiError bad_request(std::string message, std::string param = {});
// A request body as a JSON object, its keys in the client's order; nullopt with `error` set when it is not JSON (a
// NUL byte included: JSON text never holds one, and nlohmann's lexer would stop there) or not an object.
std::optional<nlohmann::ordered_json> parse_body_object(std::string_view body, ApiError& error);
// {"error": {...}} for `e`.
nlohmann::json error_json(const ApiError& e);
// Whether the answer to `e` tells the client when to come back ("Retry-After: 1"): a busy (429) or not ready (503)
// server.
inline bool retry_later(const ApiError& e) { return e.http_status == 429 || e.http_status == 503; }

// tool_choice: "auto" (the model decides), "none" (no tools offered), "required" (some call), or one named function.
enum class ToolChoice { kAuto, kNone, kRequired, kFunction };

struct ApiRequest {
  ApiKind kind = ApiKind::kChat;
  std::string model;  // "" when not given
  // chat: [{"role", "content": string (null for an assistant message with only tool_calls), ["name"], ["tool_calls"],
  //         ["tool_call_id"]}, ...]
  nlohmann::ordered_json messages;
  std::string prompt_text;             // completion: the prompt as text ...
  std::vector<int32_t> prompt_tokens;  // ... or as token ids (prompt_is_tokens)
  bool prompt_is_tokens = false;
  std::optional<int> max_tokens;  // max_tokens / max_completion_tokens
  SamplingParams sampling;        // OpenAI defaults: temperature 1, top_p 1
  bool seed_given = false;
  std::vector<std::string> stop;
  bool stream = false;
  bool include_usage = false;  // stream_options.include_usage
  int top_logprobs = -1;       // -1: no logprobs
  bool ignore_eos = false;     // extension (vLLM): keep generating past EOS
  // Completions: the prompt is repeated before each choice's text (and, with logprobs, its tokens' logprobs before the
  // generated ones'); with max_tokens 0 (allowed only with echo) nothing is generated.
  bool echo = false;
  int n = 1;  // choices, 1..kMaxChoices
  // Reasoning budget in tokens (-1: none), from max_reasoning_tokens or reasoning_effort (see reasoning_budget_for).
  int max_reasoning_tokens = -1;
  // Extensions: this request's speculative decoding (GenerationRequest::spec_method / spec_tokens).
  std::optional<SpecMethod> speculative_method;
  int speculative_tokens = -1;
  // Structured output from response_format (see response_format.h); null: free text.
  std::shared_ptr<const grammar::Grammar> response_format;
  // Tool calling (chat; see tool_request.h): the validated tool definitions as sent ([] when none) and the choice.
  nlohmann::ordered_json tools = nlohmann::ordered_json::array();
  // Where the request holds each tool's parameters schema, as its API names it, for errors (Anthropic:
  // "tools[i].input_schema"); empty: the chat route's "tools[i].function.parameters".
  std::vector<std::string> tool_schema_paths;
  ToolChoice tool_choice = ToolChoice::kAuto;
  std::string tool_choice_name;  // kFunction: the function to call
  bool parallel_tool_calls = true;
  // Anthropic: the text of a final assistant message (prefill), which the answer continues.
  std::string assistant_prefill;
};

// Most choices one request may ask for (n).
inline constexpr int kMaxChoices = 16;

// reasoning_effort → a budget of reasoning tokens: "none" 0, "minimal" 256, "low" 512, "medium" 2048, "high" 8192;
// -2 for any other value.
int reasoning_budget_for(std::string_view effort);

// Parses and validates a /v1/chat/completions or /v1/completions body. Unknown parameters are rejected unless they
// are OpenAI parameters that do not change the output (user, metadata, store, ...); parameters this server cannot
// honour (tools on completions, n > kMaxChoices, echo on chat, ...) are rejected with a message saying so. logit_bias
// keys are checked against the vocabulary later (the parser does not know it).
std::optional<ApiRequest> parse_api_request(ApiKind kind, std::string_view body, ApiError& error);
// The same for a body already parsed (an object; parse_body_object), as the Responses route builds its chat request.
std::optional<ApiRequest> parse_api_object(ApiKind kind, const nlohmann::ordered_json& body, ApiError& error);

}  // namespace cai::server
