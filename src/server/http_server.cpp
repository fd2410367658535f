// HttpServer: lifecycle, auth, error objects for every failure, and the info routes (/, /health, /metrics, models).
#include "server/http_server.h"

#include <httplib.h>
#include <sys/resource.h>
#include <sys/socket.h>

#include <fmt/chrono.h>
#include <fmt/format.h>

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <csignal>
#include <cstring>
#include <ctime>

#include "core/log.h"
#include "server/access_log.h"
#include "hal/process_group.h"
#include "server/anthropic/anthropic_request.h"
#include "server/http/auth.h"
#include "server/http/http_transport.h"
#include "server/http/sse.h"
#include "server/status_json.h"
#include "server/web/chat_page.h"
#include "server/web/dashboard_page.h"

namespace cai::server {

using nlohmann::json;

namespace {

// The status line's code, and when to come back for a server too busy (429) or not ready (503).
void set_error_status(httplib::Response& res, const ApiError& error, ErrorShape shape) {
  res.status = error_status(error, shape);
  if (retry_later(error)) res.set_header("Retry-After", "1");
}

}  // namespace

void send_error(httplib::Response& res, const ApiError& error, ErrorShape shape) {
  set_error_status(res, error, shape);
  res.set_content(json_text(error_body(error, shape)), "application/json");
}

void send_error_and_close(httplib::Response& res, const ApiError& error, ErrorShape shape) {
  set_error_status(res, error, shape);
  res.set_header("Connection", "close");
  auto body = std::make_shared<const std::string>(json_text(error_body(error, shape)));
  // httplib drops a connection only when writing its response fails: this provider writes the whole body, then
  // reports failure.
  res.set_content_provider(body->size(), "application/json",
                           [body](size_t offset, size_t length, httplib::DataSink& sink) {
                             sink.write(body->data() + offset, length);
                             return false;
                           });
}

ApiError loading_error() {
  ApiError e;
  e.http_status = 503;
  e.type = "server_error";
  e.code = "model_loading";
  e.message = "the model is still loading; retry when /health answers 200";
  return e;
}

ApiError body_too_large_error(size_t max_body) {
  ApiError e;
  e.http_status = 413;
  e.code = "request_too_large";
  e.message = "the request body is larger than the limit of " + std::to_string(max_body) + " bytes";
  return e;
}

int max_connections_for(const EngineOptions& engine, int requested) {
  constexpr int64_t kSpare = 64;  // /health, /metrics, and requests between arrival and Engine::submit
  int64_t n = std::max<int64_t>(requested, int64_t{engine.max_batch} + engine.max_queue + kSpare);
  // Each connection is a descriptor; model files, the log and the engine need some too.
  constexpr int64_t kOtherFiles = 64;
  rlimit files{};
  if (getrlimit(RLIMIT_NOFILE, &files) == 0 && files.rlim_cur != RLIM_INFINITY) {
    if (static_cast<int64_t>(files.rlim_cur) < n + kOtherFiles && files.rlim_cur < files.rlim_max) {
      files.rlim_cur = std::min<rlim_t>(files.rlim_max, static_cast<rlim_t>(n + kOtherFiles));
      setrlimit(RLIMIT_NOFILE, &files);  // the soft limit may rise to the hard one unprivileged
    }
    n = std::min<int64_t>(n, static_cast<int64_t>(files.rlim_cur) - kOtherFiles);
  }
  return static_cast<int>(std::clamp<int64_t>(n, 8, 65536));
}

namespace {

// The error object for a failure httplib detected itself (no route, body too large, unparsable request).
ApiError transport_error(const httplib::Request& req, int status, size_t max_body) {
  ApiError e;
  e.http_status = status;
  if (status == 404) {
    e.code = "not_found";
    e.message = "no route " + req.method + " " + req.path;
  } else if (status == 413) {
    e = body_too_large_error(max_body);
  } else if (status >= 500) {
    e.type = "server_error";
    e.message = "internal server error";
  } else {
    e.message = "bad request (HTTP " + std::to_string(status) + ")";
  }
  return e;
}

// The refusal of a request whose Content-Length is not one decimal number (400) or is over `max_body` (413), decided
// before any body byte is read: httplib would otherwise read a too-large body to its end, taking "-1" for 2^64 - 1.
std::optional<ApiError> content_length_error(const httplib::Request& req, size_t max_body) {
  if (!req.has_header("Content-Length")) return std::nullopt;
  const std::string value = req.get_header_value("Content-Length");
  uint64_t length = 0;
  const auto [end, ec] = std::from_chars(value.data(), value.data() + value.size(), length);
  if (req.get_header_value_count("Content-Length") > 1 || value.empty() || ec != std::errc() ||
      end != value.data() + value.size())
    return bad_request("the Content-Length header must be one number of bytes, not '" + value + "'");
  if (length > max_body) return body_too_large_error(max_body);
  return std::nullopt;
}

// The endpoint label metrics count requests under (a fixed set, so unknown paths cannot grow the series).
std::string endpoint_label(const std::string& path) {
  for (const char* known : {"/", "/health", "/metrics", "/v1/models", "/v1/chat/completions", "/v1/completions",
                            "/v1/messages", "/v1/messages/count_tokens", "/v1/responses", "/v1/status", "/dashboard"})
    if (path == known) return path;
  if (path.starts_with("/v1/models/")) return "/v1/models";
  if (path.starts_with("/v1/responses/")) return "/v1/responses/{id}";
  return "other";
}

}  // namespace

HttpServer::HttpServer(ServerOptions options)
    : options_(std::move(options)), http_(std::make_unique<HttpTransport>(options_.connections)) {
  http_->set_payload_max_length(options_.max_body_bytes);
  // Keeps the listening socket, for start() to widen its backlog.
  http_->set_socket_options([this](int sock) {
    httplib::default_socket_options(sock);
    listen_fd_ = sock;
  });
  install_routes();
}

HttpServer::~HttpServer() { stop(); }

Status HttpServer::start() {
  std::signal(SIGPIPE, SIG_IGN);  // a client that vanished must fail a write, not kill the server
  if (options_.port == 0) {
    port_ = http_->bind_to_any_port(options_.host);
    if (port_ <= 0) return io_error("cannot bind {} to a free port", options_.host);
  } else {
    if (!http_->bind_to_port(options_.host, options_.port))
      return io_error("cannot listen on {}:{} (in use, or not an address of this machine)", options_.host,
                      options_.port);
    port_ = options_.port;
  }
  // httplib 0.11 listens with a backlog of 5: connections arriving in a burst past it were reset unanswered.
  if (::listen(listen_fd_, SOMAXCONN) != 0) CAI_LOG_WARN("cannot widen the listen backlog: {}", std::strerror(errno));
  thread_ = std::thread([this] { http_->listen_after_bind(); });
  // stop() only unblocks a server that is already accepting: wait for that, so an early stop() cannot be missed.
  for (int i = 0; i < 5000 && !http_->is_running(); ++i) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  return {};
}

Status HttpServer::attach(std::unique_ptr<Engine> engine) {
  if (engine_) return internal_error("HttpServer::attach called twice");
  const Tokenizer* tok = engine->model().tokenizer.get();
  if (!tok) return unsupported("model {} has no tokenizer; the server needs one", engine->model().source);
  const std::string& source = options_.chat_template.empty() ? tok->chat_template() : options_.chat_template;
  CAI_ASSIGN_OR_RETURN(PromptBuilder prompts, PromptBuilder::create(*tok, source));
  for (const auto& [token, bias] : options_.logit_bias)
    if (token < 0 || token >= prompts.n_vocab())
      return invalid_argument("--logit-bias: token {} is not in the vocabulary (0..{})", token, prompts.n_vocab() - 1);
  if (!prompts.has_template())
    CAI_LOG_WARN(
        "the model has no chat template: chat messages are joined as plain text (contents separated by a "
        "blank line)");
  prompts_.emplace(std::move(prompts));
  engine_ = std::move(engine);
  history_ = std::make_unique<StatusHistory>([this] { return sample_status(*engine_); });
  ready_.store(true, std::memory_order_release);
  return {};
}

void HttpServer::stop() {
  if (stopped_.exchange(true)) return;
  history_.reset();
  if (engine_) engine_->shutdown();  // every running request gets its final event, so handlers return
  http_->shut_down();
  if (thread_.joinable()) thread_.join();
}

void HttpServer::serve_socket(int fd) { http_->serve_socket(fd); }

void HttpServer::install_routes() {
  // Refusals before the body is read (so the connection is closed after them).
  http_->set_pre_routing_handler([this](const httplib::Request& req, httplib::Response& res) {
    // Every response names its request, as OpenAI's (x-request-id) and Anthropic's (request-id) do.
    const std::string request_id = new_response_id("req_");
    res.set_header("request-id", request_id);
    res.set_header("x-request-id", request_id);
    const ErrorShape shape = error_shape_for(req.path);
    if (std::optional<ApiError> e = content_length_error(req, options_.max_body_bytes)) {
      send_error_and_close(res, *e, shape);
      return httplib::Server::HandlerResponse::Handled;
    }
    if (options_.api_key.empty() || !path_needs_auth(req.path)) return httplib::Server::HandlerResponse::Unhandled;
    if (bearer_matches(req.get_header_value("Authorization"), options_.api_key) ||
        (req.has_header("x-api-key") && key_matches(req.get_header_value("x-api-key"), options_.api_key)))
      return httplib::Server::HandlerResponse::Unhandled;
    ApiError e;
    e.http_status = 401;
    e.code = "invalid_api_key";
    e.message = "missing or incorrect API key: send \"Authorization: Bearer <key>\" or \"x-api-key: <key>\"";
    send_error_and_close(res, e, shape);
    res.set_header("WWW-Authenticate", "Bearer");
    return httplib::Server::HandlerResponse::Handled;
  });
  http_->set_error_handler(
      httplib::Server::HandlerWithResponse([this](const httplib::Request& req, httplib::Response& res) {
        if (!res.body.empty() || res.content_provider_) return httplib::Server::HandlerResponse::Unhandled;
        send_error(res, transport_error(req, res.status, options_.max_body_bytes), error_shape_for(req.path));
        return httplib::Server::HandlerResponse::Handled;
      }));
  http_->set_exception_handler([](const httplib::Request& req, httplib::Response& res, std::exception_ptr ep) {
    std::string what = "unknown exception";
    try {
      if (ep) std::rethrow_exception(ep);
    } catch (const std::exception& e) {
      what = e.what();
    } catch (...) {}
    CAI_LOG_ERROR("{} {}: {}", req.method, req.path, what);
    ApiError e;
    e.http_status = 500;
    e.type = "server_error";
    e.message = "internal server error: " + what;
    send_error(res, e, error_shape_for(req.path));
  });
  // Counted just before the response is written (so a client that reads /metrics next sees its request).
  http_->set_post_routing_handler([this](const httplib::Request& req, httplib::Response& res) {
    metrics_.count_request(endpoint_label(req.path), res.status);
    // A generation answered with 200 logs its own line when it ends (access_log.h), with its tokens.
    const bool generation = req.path == "/v1/chat/completions" || req.path == "/v1/completions" ||
                            req.path == "/v1/messages" || (req.path == "/v1/responses" && req.method == "POST");
    if (!(generation && res.status == 200))
      log_request(req.method, req.path, res.status, res.get_header_value("request-id"), res.body);
  });

  http_->Get("/", [](const httplib::Request&, httplib::Response& res) {
    res.set_content(std::string(chat_page_html()), "text/html; charset=utf-8");
  });
  http_->Get("/dashboard", [](const httplib::Request&, httplib::Response& res) {
    res.set_content(std::string(dashboard_page_html()), "text/html; charset=utf-8");
  });
  http_->Get("/v1/status", [this](const httplib::Request&, httplib::Response& res) {
    Engine* e = engine();
    if (!e) return send_error(res, loading_error());
    StatusView v;
    v.model = listed_models(options_.model_names).front();
    v.uptime_s = static_cast<double>(std::time(nullptr) - started_);
    v.stats = e->stats();
    v.context = e->ctx_size();
    v.history = history_->samples();
    v.history.push_back(sample_status(*e));  // now, between the sampler's seconds
    v.ttft = metrics_.recent_ttft();
    v.tpot = metrics_.recent_tpot();
    v.window_s = metrics_.recent_window_seconds();
    res.set_content(json_text(status_json(v, *e)), "application/json");
  });
  http_->Get("/health", [this](const httplib::Request&, httplib::Response& res) {
    if (const std::string failure = hal::group_failure(); !failure.empty()) {
      res.status = 503;
      res.set_content(json_text({{"status", "rank_failed"}, {"error", failure}}), "application/json");
      return;
    }
    const bool ready = engine() != nullptr;
    res.status = ready ? 200 : 503;
    res.set_content(json_text({{"status", ready ? "ok" : "loading"}}), "application/json");
  });
  http_->Get("/metrics", [this](const httplib::Request&, httplib::Response& res) {
    std::optional<EngineStats> stats;
    std::optional<DeviceReadings> device;
    if (Engine* e = engine()) {
      stats = e->stats();
      if (const Model* m = e->model().model.get())
        device = DeviceReadings{m->device().name(), m->device().telemetry_sensor(), m->device().telemetry()};
    }
    std::string text = metrics_.render(stats, http_->counters(), http_->max_connections(), device);
    if (const hal::ProcessGroup* group = hal::process_group())
      text += fmt::format(
          "# HELP cai_process_ranks Processes of the server's MPI job.\n# TYPE cai_process_ranks gauge\n"
          "cai_process_ranks {}\n# HELP cai_rank_failed 1 once a rank of the job failed (the job then "
          "exits).\n# TYPE cai_rank_failed gauge\ncai_rank_failed {}\n",
          group->size(), hal::group_failure().empty() ? 0 : 1);
    res.set_content(text, "text/plain; version=0.0.4; charset=utf-8");
  });
  // /v1/models in OpenAI's shape, or in Anthropic's when the request carries anthropic-version (Anthropic SDKs and
  // Claude Code list models that way).
  auto model_json = [this](const std::string& id, bool anthropic) {
    if (anthropic)
      return json{{"type", "model"},
                  {"id", id},
                  {"display_name", id},
                  {"created_at", fmt::format("{:%Y-%m-%dT%H:%M:%SZ}", fmt::gmtime(started_))}};
    json m = {{"id", id}, {"object", "model"}, {"created", started_}, {"owned_by", "cai"}};
    if (Engine* e = engine()) m["max_model_len"] = e->ctx_size();
    return m;
  };
  http_->Get("/v1/models", [this, model_json](const httplib::Request& req, httplib::Response& res) {
    if (!engine()) return send_error(res, loading_error());
    const bool anthropic = req.has_header("anthropic-version");
    const std::vector<std::string> ids = listed_models(options_.model_names);
    json data = json::array();
    for (const std::string& id : ids) data.push_back(model_json(id, anthropic));
    if (!anthropic)
      return res.set_content(json_text({{"object", "list"}, {"data", std::move(data)}}), "application/json");
    res.set_content(json_text({{"data", std::move(data)},
                               {"has_more", false},
                               {"first_id", ids.empty() ? json(nullptr) : json(ids.front())},
                               {"last_id", ids.empty() ? json(nullptr) : json(ids.back())}}),
                    "application/json");
  });
  http_->Get("/v1/models/(.+)", [this, model_json](const httplib::Request& req, httplib::Response& res) {
    if (!engine()) return send_error(res, loading_error());
    const std::string id = req.matches[1].str();
    const bool anthropic = req.has_header("anthropic-version");
    if (!serves_model(options_.model_names, id))
      return send_error(res, model_not_found_error(id, options_.model_names),
                        anthropic ? ErrorShape::kAnthropic : ErrorShape::kOpenAI);
    res.set_content(json_text(model_json(id, anthropic)), "application/json");
  });
  // The generation routes read their bodies themselves (see read_body), under max_body_bytes whatever the encoding.
  using ReaderHandler = httplib::Server::HandlerWithContentReader;
  http_->Post("/v1/chat/completions", ReaderHandler([this](const httplib::Request&, httplib::Response& res,
                                                           const httplib::ContentReader& reader) {
                handle_generate(ApiKind::kChat, reader, res);
              }));
  http_->Post("/v1/completions", ReaderHandler([this](const httplib::Request&, httplib::Response& res,
                                                      const httplib::ContentReader& reader) {
                handle_generate(ApiKind::kCompletion, reader, res);
              }));
  http_->Post("/v1/messages", ReaderHandler([this](const httplib::Request&, httplib::Response& res,
                                                   const httplib::ContentReader& reader) {
                handle_anthropic(AnthropicRoute::kMessages, reader, res);
              }));
  http_->Post("/v1/messages/count_tokens", ReaderHandler([this](const httplib::Request&, httplib::Response& res,
                                                                const httplib::ContentReader& reader) {
                handle_anthropic(AnthropicRoute::kCountTokens, reader, res);
              }));
  install_responses_routes();
}

}  // namespace cai::server
