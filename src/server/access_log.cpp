// Access-log lines at info level (CAI_LOG_LEVEL=warn hides them).
#include "server/access_log.h"

#include <nlohmann/json.hpp>

#include "core/log.h"

namespace cai::server {

void log_request(std::string_view method, std::string_view path, int status, std::string_view request_id,
                 std::string_view body) {
  std::string reason;
  if (status >= 400) {
    const nlohmann::json j = nlohmann::json::parse(body, nullptr, /*allow_exceptions=*/false);
    if (j.is_object() && j.contains("error") && j["error"].is_object() && j["error"].contains("message") &&
        j["error"]["message"].is_string())
      reason = ": " + j["error"]["message"].get<std::string>();
  }
  if (path == "/health" || path == "/metrics")
    CAI_LOG_DEBUG("{} {} {} request-id {}{}", method, path, status, request_id, reason);
  else
    CAI_LOG_INFO("{} {} {} request-id {}{}", method, path, status, request_id, reason);
}

void log_generation(const AccessLine& line, const Usage& usage, bool finished) {
  const double seconds = std::chrono::duration<double>(Clock::now() - line.arrival).count();
  CAI_LOG_INFO("{} {} {} model {} prompt {} tokens ({} cached) completion {} tokens {:.2f} s request-id {}",
               line.method, line.path, finished ? "200" : "200 (client gone)", line.model, usage.prompt_tokens,
               usage.cached_tokens, usage.completion_tokens, seconds, line.request_id);
}

void log_prompt_text(std::string_view request_id, int n_tokens, const std::string& text) {
  CAI_LOG_INFO("prompt request-id {} ({} tokens): {}", request_id, n_tokens,
               nlohmann::json(text).dump(-1, ' ', false, nlohmann::json::error_handler_t::replace));
}

}  // namespace cai::server
