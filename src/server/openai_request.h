// OpenAI request schema: request JSON → a validated ApiRequest, or an ApiError naming the bad parameter.
#pragma once

#include <nlohmann/json.hpp>

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "runtime/sampler.h"

namespace cai::server {

enum class ApiKind { kChat, kCompletion };

// An error as OpenAI reports it: HTTP status + {"error": {"message", "type", "param", "code"}}.
struct ApiError {
  int http_status = 400;
  std::string message;
  std::string param;  // "" → null
  std::string type = "invalid_request_error";
  std::string code;   // "" → null
};

ApiError bad_request(std::string message, std::string param = {});
// {"error": {...}} for `e`.
nlohmann::json error_json(const ApiError& e);
// Whether the answer to `e` tells the client when to come back ("Retry-After: 1"): a busy (429) or not ready (503)
// server.
inline bool retry_later(const ApiError& e) { return e.http_status == 429 || e.http_status == 503; }

struct ApiRequest {
  ApiKind kind = ApiKind::kChat;
  std::string model;                    // "" when not given
  nlohmann::ordered_json messages;      // chat: [{"role", "content": string, ["name"]}, ...]
  std::string prompt_text;              // completion: the prompt as text ...
  std::vector<int32_t> prompt_tokens;   // ... or as token ids (prompt_is_tokens)
  bool prompt_is_tokens = false;
  std::optional<int> max_tokens;        // max_tokens / max_completion_tokens
  SamplingParams sampling;              // OpenAI defaults: temperature 1, top_p 1
  bool seed_given = false;
  std::vector<std::string> stop;
  bool stream = false;
  bool include_usage = false;           // stream_options.include_usage
  int top_logprobs = -1;                // -1: no logprobs
  bool ignore_eos = false;              // extension (vLLM): keep generating past EOS
};

// Parses and validates a /v1/chat/completions or /v1/completions body. Unknown parameters are rejected unless they
// are OpenAI parameters that do not change the output (user, metadata, store, ...); parameters this server cannot
// honour (tools, logit_bias, n > 1, echo, ...) are rejected with a message saying so.
std::optional<ApiRequest> parse_api_request(ApiKind kind, std::string_view body, ApiError& error);

}  // namespace cai::server
