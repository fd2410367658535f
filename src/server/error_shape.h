// Error bodies in the two wire shapes the server speaks: OpenAI's {"error": {...}} on the OpenAI routes, Anthropic's
// {"type": "error", "error": {"type", "message"}} on /v1/messages.
#pragma once

#include <nlohmann/json.hpp>

#include <string_view>

#include "server/openai/openai_request.h"

namespace cai::server {

enum class ErrorShape { kOpenAI, kAnthropic };

// The shape errors on `path` take: Anthropic's under /v1/messages, OpenAI's elsewhere.
ErrorShape error_shape_for(std::string_view path);
// Anthropic's error type for an HTTP status: invalid_request_error (400 and other 4xx), authentication_error (401),
// permission_error (403), not_found_error (404), request_too_large (413), rate_limit_error (429), overloaded_error
// (503, sent as 529), api_error (other 5xx).
const char* anthropic_error_type(int http_status);
// The HTTP status `e` is sent with: Anthropic reports an overloaded or unavailable server (503) as 529.
int error_status(const ApiError& e, ErrorShape shape);
// The error's body.
nlohmann::json error_body(const ApiError& e, ErrorShape shape);

}  // namespace cai::server
