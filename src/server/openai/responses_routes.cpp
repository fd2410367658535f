// The OpenAI Responses API routes: POST /v1/responses (the request translated into a chat ApiRequest and run through
// the chat route's prompt building, submission and response flow, answered as Responses objects and events), and
// GET / DELETE /v1/responses/{id} on the store.
#include <httplib.h>

#include <fmt/format.h>

#include <ctime>

#include "server/access_log.h"
#include "server/generation.h"
#include "server/http/http_transport.h"
#include "server/http/request_body.h"
#include "server/http/sse.h"
#include "server/http_server.h"
#include "server/openai/responses_request.h"
#include "server/openai/responses_writer.h"
#include "server/tools/tool_prompt.h"

namespace cai::server {

namespace {

ApiError response_not_found(const std::string& id) {
  ApiError e = bad_request(fmt::format("No response with id '{}' found.", id));
  e.http_status = 404;
  e.code = "response_not_found";
  return e;
}

}  // namespace

void HttpServer::install_responses_routes() {
  responses_ = std::make_shared<ResponseStore>(options_.response_store_entries, options_.response_store_bytes);
  http_->Post("/v1/responses", httplib::Server::HandlerWithContentReader(
                                   [this](const httplib::Request&, httplib::Response& res,
                                          const httplib::ContentReader& reader) { handle_responses(reader, res); }));
  http_->Get("/v1/responses/([^/]+)", [this](const httplib::Request& req, httplib::Response& res) {
    const std::string id = req.matches[1].str();
    std::optional<StoredResponse> stored = responses_->get(id);
    if (!stored) return send_error(res, response_not_found(id));
    res.set_content(json_text(stored->response), "application/json");
  });
  http_->Delete("/v1/responses/([^/]+)", [this](const httplib::Request& req, httplib::Response& res) {
    const std::string id = req.matches[1].str();
    if (!responses_->erase(id)) return send_error(res, response_not_found(id));
    res.set_content(json_text({{"id", id}, {"object", "response.deleted"}, {"deleted", true}}), "application/json");
  });
}

void HttpServer::handle_responses(const httplib::ContentReader& reader, httplib::Response& res) {
  BodyBudget budget(body_bytes_in_flight_, body_bytes_in_flight_limit(options_));
  std::string body;
  Engine* eng = read_generation_body(reader, res, budget, body);
  if (!eng) return;
  const Clock::time_point arrival = Clock::now();
  ApiError error;
  std::optional<ResponsesRequest> req = parse_responses_request(body, *responses_, error);
  if (!req) return send_error(res, error);
  const ApiRequest& api = req->api;
  if (std::optional<ApiError> e = unserved_model(api)) return send_error(res, *e);
  BuiltPrompt prompt;
  GenerationRequest gen_request;
  if (!prepare(api, prompt, gen_request, error)) {
    if (error.param == "messages") error.param = "input";  // the chat request's field, as this API names it
    return send_error(res, error);
  }
  log_prompt(res, prompt);
  Result<std::shared_ptr<Generation>> gen = Generation::submit(*eng, metrics_, std::move(gen_request), arrival);
  if (!gen.ok()) return send_error(res, submit_error(gen.status()));
  ResponseMeta meta = response_meta("resp_", api);
  const AccessLine line{"POST", "/v1/responses", meta.model, res.get_header_value("request-id"), arrival};
  auto writer = std::make_shared<ResponsesWriter>(*req, std::move(meta), prompt.opens_think, offered_tool_syntax(api),
                                                  responses_);
  if (api.stream) return respond_stream(std::move(gen).value(), std::move(writer), res, line);
  respond_full(std::move(gen).value(), std::move(writer), res, line);
}

}  // namespace cai::server
