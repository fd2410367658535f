// HttpServer: the OpenAI-compatible HTTP front end (routes, auth, errors, SSE) over one Engine.
#pragma once

#include <atomic>
#include <chrono>
#include <memory>
#include <optional>
#include <string>
#include <thread>

#include "cai/engine.h"
#include "core/status.h"
#include "server/metrics.h"
#include "server/openai_request.h"
#include "server/prompt_builder.h"

namespace httplib {
class ContentReader;
class Server;
struct Response;
}  // namespace httplib

namespace cai::server {

class Generation;
class ResponseWriter;

struct ServerOptions {
  std::string host = "127.0.0.1";
  int port = 8000;                      // 0 = any free port (see HttpServer::port())
  std::string api_key;                  // non-empty: /v1/* needs "Authorization: Bearer <api_key>"
  std::string model_name = "cai";       // the id /v1/models lists; requests naming another model get 404
  std::string chat_template;            // template source replacing the model's ("" = the model's own)
  size_t max_body_bytes = size_t(8) << 20;  // larger bodies → 413
  int n_http_threads = 32;              // connections served at once (each streaming request holds one)
  std::chrono::milliseconds keep_alive{1000};  // SSE comment interval while a request produces nothing
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

 private:
  void install_routes();
  void handle_generate(ApiKind kind, const httplib::ContentReader& reader, httplib::Response& res);
  // The request's prompt as tokens; false with `error` set when refused (a text longer than the context could hold is
  // refused before it is tokenized).
  bool build_prompt(const ApiRequest& api, BuiltPrompt& prompt, ApiError& error) const;
  // Validated request → prompt tokens and a GenerationRequest; false with `error` set when refused.
  bool prepare(const ApiRequest& api, BuiltPrompt& prompt, GenerationRequest& gen, ApiError& error) const;
  void respond_full(std::shared_ptr<Generation> gen, ResponseWriter& writer, httplib::Response& res);
  void respond_stream(std::shared_ptr<Generation> gen, std::shared_ptr<ResponseWriter> writer,
                      httplib::Response& res);
  Engine* engine() const { return ready_.load(std::memory_order_acquire) ? engine_.get() : nullptr; }

  ServerOptions options_;
  std::unique_ptr<httplib::Server> http_;
  std::thread thread_;
  int port_ = 0;
  int listen_fd_ = -1;  // the listening socket (httplib's)
  std::unique_ptr<Engine> engine_;
  std::optional<PromptBuilder> prompts_;
  std::atomic<bool> ready_{false};
  std::atomic<bool> stopped_{false};
  ServerMetrics metrics_;
};

// Writes `error` as the response (status + OpenAI error object; a 429 also gets "Retry-After: 1").
void send_error(httplib::Response& res, const ApiError& error);
// As send_error, then closes the connection: for a request whose body was not (all) read, so that the rest of it is
// not taken for the next request.
void send_error_and_close(httplib::Response& res, const ApiError& error);
// 503 while the model loads.
ApiError loading_error();
// 413 for a body over `max_body` bytes.
ApiError body_too_large_error(size_t max_body);

// HTTP threads for a server over an engine with these options: one per request the engine holds (running or
// waiting) plus spares for /health and /metrics, so a full engine queue answers 429 before connections wait unserved
// (at most 4096: a larger max_queue is not reachable over HTTP).
int http_threads_for(const EngineOptions& engine);

}  // namespace cai::server
