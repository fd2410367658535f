// HttpServer: the OpenAI- and Anthropic-compatible HTTP front end (routes, auth, errors, SSE) over one Engine.
#pragma once

#include <atomic>
#include <chrono>
#include <ctime>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "cai/engine.h"
#include "core/status.h"
#include "server/http/connection.h"
#include "server/error_shape.h"
#include "server/metrics.h"
#include "server/status_history.h"
#include "server/openai/openai_request.h"
#include "server/openai/openai_response.h"
#include "server/prompt_builder.h"
#include "server/served_models.h"
#include "server/tools/tool_calls.h"

namespace httplib {
class ContentReader;
struct Response;
}  // namespace httplib

namespace cai::server {

enum class AnthropicRoute;
class EventWriter;
class Generation;
struct AccessLine;
class BodyBudget;
class HttpTransport;
class ResponseStore;

struct ServerOptions {
  std::string host = "127.0.0.1";
  int port = 8000;      // 0 = any free port (see HttpServer::port())
  std::string api_key;  // non-empty: /v1/* needs "Authorization: Bearer <api_key>" or "x-api-key"
  // Model ids clients may use (--served-model-name a,b,...), each exact or a glob (claude-*; served_models.h):
  // /v1/models lists the exact ones; a request naming another gets 404; a response names the id its request used, or
  // the first exact one.
  std::vector<std::string> model_names = {"cai"};
  int default_max_tokens = 8192;  // chat max_tokens when the request gives none (0: all the context left)
  int max_output_tokens = 0;      // every request's max_tokens is lowered to this (0: no cap; --max-output-tokens)
  // Biases every request gets on top of its own logit_bias (--logit-bias ID:BIAS; a request's bias for the same token
  // wins). attach() refuses ids outside the vocabulary.
  std::vector<std::pair<int32_t, float>> logit_bias;
  std::string chat_template;                // template source replacing the model's ("" = the model's own)
  size_t max_body_bytes = size_t(8) << 20;  // larger bodies → 413
  size_t max_body_bytes_in_flight = 0;      // all bodies being read or served at once (0 = 16 × max_body_bytes): 429
  ConnectionLimits connections;             // open connections, head deadline and size, keep-alive and I/O waits
  std::chrono::milliseconds keep_alive{1000};  // SSE comment interval while a request produces nothing
  bool log_prompts = false;                    // --log-prompts: each generation's prompt text in the log (log_prompt)
  // The Responses API's store (previous_response_id, GET /v1/responses/{id}): at most this many responses and bytes.
  size_t response_store_entries = 1024;
  size_t response_store_bytes = size_t(256) << 20;
};

class HttpServer {
 public:
  explicit HttpServer(ServerOptions options);
  ~HttpServer();
  HttpServer(const HttpServer&) = delete;
  HttpServer& operator=(const HttpServer&) = delete;

  // Binds and serves on a background thread; until attach() /health answers 503 and /v1/* 503.
  Status start();
  // The bound port (the real one when options.port was 0).
  int port() const { return port_; }
  // Makes `engine` live: /health turns 200. Fails (leaving the server loading) when the model has no tokenizer or
  // the chat template does not parse. Call at most once.
  Status attach(std::unique_ptr<Engine> engine);
  // Shuts the engine down (its requests end), stops listening and joins the server thread. Idempotent.
  void stop();
  // Serves one connected socket on the calling thread, as if it had been accepted (taking ownership of `fd`).
  void serve_socket(int fd);

 private:
  void install_routes();
  // A generation route's start: reads the request body under the body limits (its bytes held in `budget` while the
  // request lives) and returns the engine; null once the request was answered with the error (too large, the
  // server-wide budget spent, the model still loading), in `shape`.
  Engine* read_generation_body(const httplib::ContentReader& reader, httplib::Response& res, BodyBudget& budget,
                               std::string& body, ErrorShape shape = ErrorShape::kOpenAI);
  void handle_generate(ApiKind kind, const httplib::ContentReader& reader, httplib::Response& res);
  // The Anthropic Messages API (anthropic_routes.cpp): POST /v1/messages or /v1/messages/count_tokens.
  void handle_anthropic(AnthropicRoute route, const httplib::ContentReader& reader, httplib::Response& res);
  // The OpenAI Responses API (responses_routes.cpp): POST /v1/responses, GET and DELETE /v1/responses/{id}.
  void install_responses_routes();
  void handle_responses(const httplib::ContentReader& reader, httplib::Response& res);
  // The request's prompt as tokens; false with `error` set when refused (a text longer than the context could hold is
  // refused before it is tokenized).
  bool build_prompt(const ApiRequest& api, BuiltPrompt& prompt, ApiError& error) const;
  // Validated request → prompt tokens and a GenerationRequest; false with `error` set when refused.
  bool prepare(const ApiRequest& api, BuiltPrompt& prompt, GenerationRequest& gen, ApiError& error) const;
  // A 404 for a request naming a model this server does not serve (no model named: the server's first).
  std::optional<ApiError> unserved_model(const ApiRequest& api) const;
  // The response id (`id_prefix` + random hex), the time and the model name a generation's answer carries.
  ResponseMeta response_meta(const char* id_prefix, const ApiRequest& api) const;
  // How the model writes tool calls when `api` offers tools (nullopt: the whole answer is text).
  std::optional<ToolSyntax> offered_tool_syntax(const ApiRequest& api) const;
  // With --log-prompts: the prompt the model reads for the request answered in `res` (its request id), at info.
  void log_prompt(const httplib::Response& res, const BuiltPrompt& prompt) const;
  // The answer to a submitted generation, whole or streamed; `line` is its access-log line (written when it ends).
  void respond_full(std::shared_ptr<Generation> gen, std::shared_ptr<EventWriter> writer, httplib::Response& res,
                    const AccessLine& line);
  // respond_full's answer to a client that finished sending before its answer was ready (see the definition).
  void respond_full_to_quiet_client(std::shared_ptr<Generation> gen, std::shared_ptr<EventWriter> writer,
                                    httplib::Response& res, const AccessLine& line);
  void respond_stream(std::shared_ptr<Generation> gen, std::shared_ptr<EventWriter> writer, httplib::Response& res,
                      const AccessLine& line);
  Engine* engine() const { return ready_.load(std::memory_order_acquire) ? engine_.get() : nullptr; }

  ServerOptions options_;
  std::unique_ptr<HttpTransport> http_;
  std::thread thread_;
  int port_ = 0;
  int listen_fd_ = -1;  // the listening socket (httplib's)
  std::unique_ptr<Engine> engine_;
  std::unique_ptr<StatusHistory> history_;  // the dashboard's samples, taken while the engine serves
  std::optional<PromptBuilder> prompts_;
  std::atomic<bool> ready_{false};
  std::atomic<bool> stopped_{false};
  std::atomic<size_t> body_bytes_in_flight_{0};
  ServerMetrics metrics_;
  std::shared_ptr<ResponseStore> responses_;
  const std::time_t started_ = std::time(nullptr);  // /v1/models' `created` for every model
};

// Writes `error` as the response (status + error object in `shape`; a 429 or 503 also gets "Retry-After: 1").
void send_error(httplib::Response& res, const ApiError& error, ErrorShape shape = ErrorShape::kOpenAI);
// As send_error, then closes the connection: for a request whose body was not (all) read, so that the rest of it is
// not taken for the next request.
void send_error_and_close(httplib::Response& res, const ApiError& error, ErrorShape shape = ErrorShape::kOpenAI);
// The HTTP answer to an Engine::submit failure (429 when the queue is full, 503 when shutting down).
ApiError submit_error(const Status& st);
// 503 while the model loads.
ApiError loading_error();
// 413 for a body over `max_body` bytes.
ApiError body_too_large_error(size_t max_body);
// 404 for a model id outside `served`, naming the ids that are served.

// The open-connection cap for a server over an engine with these options: at least `requested`, and room for every
// request the engine holds (running or waiting) plus spares for /health and /metrics, so that a full engine queue
// answers 429 before connections are refused; at most what the process's open-file limit allows.
int max_connections_for(const EngineOptions& engine, int requested);

}  // namespace cai::server
