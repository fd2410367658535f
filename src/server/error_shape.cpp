// Error bodies: OpenAI's object or Anthropic's, and Anthropic's names for HTTP statuses.
#include "server/error_shape.h"

#include <fmt/format.h>

namespace cai::server {

ErrorShape error_shape_for(std::string_view path) {
  return path == "/v1/messages" || path.starts_with("/v1/messages/") ? ErrorShape::kAnthropic : ErrorShape::kOpenAI;
}

const char* anthropic_error_type(int http_status) {
  switch (http_status) {
    case 401: return "authentication_error";
    case 403: return "permission_error";
    case 404: return "not_found_error";
    case 413: return "request_too_large";
    case 429: return "rate_limit_error";
    case 503:
    case 529: return "overloaded_error";
    default: return http_status >= 500 ? "api_error" : "invalid_request_error";
  }
}

int error_status(const ApiError& e, ErrorShape shape) {
  return shape == ErrorShape::kAnthropic && e.http_status == 503 ? 529 : e.http_status;
}

nlohmann::json error_body(const ApiError& e, ErrorShape shape) {
  if (shape == ErrorShape::kOpenAI) return error_json(e);
  // Anthropic's wording for a prompt over the context, which clients match to compact the conversation.
  const std::string message =
      e.code == "context_length_exceeded" && e.prompt_tokens >= 0
          ? fmt::format("prompt is too long: {} tokens > {} maximum", e.prompt_tokens, e.context_tokens)
          : e.message;
  return {{"type", "error"}, {"error", {{"type", anthropic_error_type(e.http_status)}, {"message", message}}}};
}

}  // namespace cai::server
