// The Anthropic Messages API routes (POST /v1/messages, /v1/messages/count_tokens): the request translated into an
// ApiRequest and run through the chat route's prompt building, submission and response flow, answered in Anthropic's
// shapes.
#include <httplib.h>

#include <algorithm>
#include <ctime>

#include "server/anthropic/anthropic_request.h"
#include "server/access_log.h"
#include "server/anthropic/anthropic_response.h"
#include "server/generation.h"
#include "server/http_server.h"
#include "server/http/request_body.h"
#include "server/http/sse.h"
#include "server/served_models.h"
#include "server/tools/tool_calls.h"

namespace cai::server {

namespace {

constexpr ErrorShape kShape = ErrorShape::kAnthropic;

}  // namespace

void HttpServer::handle_anthropic(AnthropicRoute route, const httplib::ContentReader& reader, httplib::Response& res) {
  BodyBudget budget(body_bytes_in_flight_, body_bytes_in_flight_limit(options_));
  std::string body;
  Engine* eng = read_generation_body(reader, res, budget, body, kShape);
  if (!eng) return;
  const Clock::time_point arrival = Clock::now();
  ApiError error;
  std::optional<ApiRequest> req = parse_anthropic_request(route, body, error);
  if (!req) return send_error(res, error, kShape);
  ApiRequest& api = *req;
  if (std::optional<ApiError> e = unserved_model(api)) return send_error(res, *e, kShape);
  BuiltPrompt prompt;
  if (route == AnthropicRoute::kCountTokens) {
    if (!build_prompt(api, prompt, error)) return send_error(res, error, kShape);
    res.set_content(json_text({{"input_tokens", prompt.tokens.size()}}), "application/json");
    return;
  }
  // max_tokens is a cap Anthropic clients always send, often larger than the context a local model has (Claude Code
  // asks for 32000): it is lowered to the room the prompt leaves rather than refused.
  const int max_tokens = api.max_tokens.value_or(0);
  api.max_tokens.reset();
  GenerationRequest gen_request;
  if (!prepare(api, prompt, gen_request, error)) return send_error(res, error, kShape);
  log_prompt(res, prompt);
  gen_request.max_tokens = std::min(max_tokens, eng->ctx_size() - static_cast<int>(prompt.tokens.size()));
  if (options_.max_output_tokens > 0)
    gen_request.max_tokens = std::min(gen_request.max_tokens, options_.max_output_tokens);
  Result<std::shared_ptr<Generation>> gen = Generation::submit(*eng, metrics_, std::move(gen_request), arrival);
  if (!gen.ok()) return send_error(res, submit_error(gen.status()), kShape);
  ResponseMeta meta = response_meta("msg_", api);
  const AccessLine line{"POST", "/v1/messages", meta.model, res.get_header_value("request-id"), arrival};
  auto writer = std::make_shared<AnthropicWriter>(std::move(meta), prompt.opens_think, offered_tool_syntax(api));
  if (api.stream) return respond_stream(std::move(gen).value(), std::move(writer), res, line);
  respond_full(std::move(gen).value(), std::move(writer), res, line);
}

}  // namespace cai::server
