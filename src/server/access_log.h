// The access log: one info line per request (method, path, status, request id; for a generation also the model, its
// tokens and duration), and the reason of a refusal. Prompt text is logged only when asked (--log-prompts), output
// text never.
#pragma once

#include <string>
#include <string_view>

#include "server/generation.h"

namespace cai::server {

// What a generation request's line says besides its counts: "POST /v1/messages model m request-id req_…".
struct AccessLine {
  std::string method, path, model, request_id;
  Clock::time_point arrival;
};

// A request answered without a stream of generated output (a GET, or any refusal): `body` is the response body, whose
// error message (OpenAI's or Anthropic's shape) the line names. /health and /metrics log at debug (probes poll them).
void log_request(std::string_view method, std::string_view path, int status, std::string_view request_id,
                 std::string_view body);
// A generation request once its answer ended: `finished` false when the client went away first.
void log_generation(const AccessLine& line, const Usage& usage, bool finished);
// The prompt text of a generation request, as one line (a JSON string: newlines and quotes escaped).
void log_prompt_text(std::string_view request_id, int n_tokens, const std::string& text);

}  // namespace cai::server
