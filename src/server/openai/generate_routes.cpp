// The generation routes (/v1/chat/completions, /v1/completions): validate, build the prompt, submit, respond.
#include <httplib.h>

#include <fmt/format.h>

#include <algorithm>
#include <ctime>
#include <mutex>
#include <random>

#include "server/access_log.h"
#include "server/http/connection.h"
#include "server/generation.h"
#include "server/http_server.h"
#include "server/http/request_body.h"
#include "server/openai/response_writer.h"
#include "server/http/sse.h"
#include "server/tools/tool_grammar.h"

namespace cai::server {

ApiError submit_error(const Status& st) {
  ApiError e;
  e.message = st.message();
  switch (st.code()) {
    case StatusCode::kInvalidArgument: break;
    case StatusCode::kResourceExhausted:
      e.http_status = 429;
      e.type = "rate_limit_error";
      e.code = "rate_limit_exceeded";
      e.message = "the server is busy (waiting queue full): " + st.message();
      break;
    case StatusCode::kUnavailable:
      e.http_status = 503;
      e.type = "server_error";
      e.code = "unavailable";
      break;
    default:
      e.http_status = 500;
      e.type = "server_error";
      e.message = st.to_string();
  }
  return e;
}

namespace {

// A request of (at least) n_tokens tokens where at most max_tokens fit (a prompt alone: the context less the one token
// it must leave to generate).
ApiError context_error(std::string message, ApiKind kind, int64_t n_tokens, int64_t max_tokens) {
  ApiError e = bad_request(std::move(message), kind == ApiKind::kChat ? "messages" : "prompt");
  e.code = "context_length_exceeded";
  e.prompt_tokens = n_tokens;
  e.context_tokens = max_tokens;
  return e;
}

// How often a non-streaming request checks that its client is still there.
constexpr std::chrono::milliseconds kQuietClientCheck{100};

uint64_t random_seed() {
  static std::mutex mu;
  static std::mt19937_64 rng{std::random_device{}()};
  std::lock_guard lock(mu);
  return rng();
}

}  // namespace

bool HttpServer::build_prompt(const ApiRequest& api, BuiltPrompt& prompt, ApiError& error) const {
  const char* param = api.kind == ApiKind::kChat ? "messages" : "prompt";
  if (api.prompt_is_tokens) {
    Result<BuiltPrompt> built = prompts_->completion_tokens(api.prompt_tokens);
    if (!built.ok())
      error = bad_request(built.status().message(), param);
    else
      prompt = std::move(built).value();
    return built.ok();
  }
  std::string rendered;
  if (api.kind == ApiKind::kChat) {
    Result<std::string> text = prompts_->chat_text(api.messages, tool_offer(api));
    if (!text.ok()) {
      error = bad_request(text.status().message(), param);
      return false;
    }
    rendered = prompts_->with_prefill(std::move(text).value(), api.assistant_prefill);
  }
  const std::string& text = api.kind == ApiKind::kChat ? rendered : api.prompt_text;
  // A text longer than this cannot fit the context: tokenizing megabytes takes long, and the answer is known.
  const size_t max_bytes = size_t(engine_->ctx_size()) * prompts_->longest_token_bytes();
  if (text.size() > max_bytes) {
    error = context_error(fmt::format("the prompt text has {} bytes but the model's context of {} tokens holds at most "
                                      "{} (no token spans more than {} bytes)",
                                      text.size(), engine_->ctx_size(), max_bytes, prompts_->longest_token_bytes()),
                          api.kind, static_cast<int64_t>(text.size() / prompts_->longest_token_bytes()),
                          engine_->ctx_size() - 1);
    return false;
  }
  // Past a megabyte, a sliced count refuses a text over the context before the whole of it is encoded at once.
  constexpr size_t kSlicedCountAbove = 1 << 20;
  if (text.size() > kSlicedCountAbove) {
    const size_t at_least = prompts_->tokens_at_least(text, size_t(engine_->ctx_size()));
    if (at_least >= size_t(engine_->ctx_size())) {
      error = context_error(fmt::format("the prompt has more than {} tokens but the model's context holds {}: nothing "
                                        "is left to generate",
                                        at_least, engine_->ctx_size()),
                            api.kind, static_cast<int64_t>(at_least), engine_->ctx_size() - 1);
      return false;
    }
  }
  prompt = prompts_->encode(text);
  return true;
}

bool HttpServer::prepare(const ApiRequest& api, BuiltPrompt& prompt, GenerationRequest& gen, ApiError& error) const {
  if (!build_prompt(api, prompt, error)) return false;
  const int n_prompt = static_cast<int>(prompt.tokens.size());
  const int n_ctx = engine_->ctx_size();
  if (n_prompt == 0) {
    error = bad_request("the prompt is empty", api.kind == ApiKind::kChat ? "messages" : "prompt");
    return false;
  }
  if (n_prompt >= n_ctx) {
    error = context_error(fmt::format("the prompt has {} tokens but the model's context holds {}: nothing is left to "
                                      "generate",
                                      n_prompt, n_ctx),
                          api.kind, n_prompt, n_ctx - 1);
    return false;
  }
  const int room = n_ctx - n_prompt;
  const int n_vocab = prompts_->n_vocab();
  for (const auto& [token, bias] : api.sampling.logit_bias) {
    if (token < n_vocab) continue;
    error = bad_request(fmt::format("logit_bias key '{}' is not a token id: the vocabulary has {} tokens (0..{})",
                                    token, n_vocab, n_vocab - 1),
                        "logit_bias");
    return false;
  }
  // --max-output-tokens lowers what a request asks for before it is checked against the room left.
  std::optional<int> asked = api.max_tokens;
  if (asked && options_.max_output_tokens > 0) asked = std::min(*asked, options_.max_output_tokens);
  if (asked && *asked > room) {
    error = context_error(fmt::format("this model's maximum context length is {} tokens; the request asks for {} "
                                      "({} in the prompt, {} to generate)",
                                      n_ctx, n_prompt + *asked, n_prompt, *asked),
                          api.kind, n_prompt + *asked, n_ctx);
    return false;
  }
  // Defaults: completions stop after 16 tokens as OpenAI's; chat after --default-max-tokens (0: the context left).
  const int chat_default = options_.default_max_tokens > 0 ? std::min(options_.default_max_tokens, room) : room;
  gen.max_tokens = asked ? *asked : api.kind == ApiKind::kChat ? chat_default : std::min(16, room);
  // max_tokens 0 (echo): the engine computes the prompt and one token, which the writer leaves out.
  if (gen.max_tokens == 0) gen.max_tokens = 1;
  gen.prompt_logprobs = api.echo && api.top_logprobs >= 0;
  if (options_.max_output_tokens > 0) gen.max_tokens = std::min(gen.max_tokens, options_.max_output_tokens);
  gen.prompt = prompt.tokens;
  gen.sampling = api.sampling;
  for (const std::pair<int32_t, float>& server_bias : options_.logit_bias) {
    auto& own = gen.sampling.logit_bias;
    if (std::none_of(own.begin(), own.end(), [&](const auto& tb) { return tb.first == server_bias.first; }))
      own.push_back(server_bias);
  }
  if (!api.seed_given) gen.sampling.seed = random_seed();
  gen.stop = api.stop;
  gen.ignore_eos = api.ignore_eos;
  gen.top_logprobs = api.top_logprobs;
  gen.n = api.n;
  gen.max_reasoning_tokens = api.max_reasoning_tokens;
  gen.spec_method = api.speculative_method;
  gen.spec_tokens = api.speculative_tokens;
  gen.prompt_opens_think = prompt.opens_think;
  gen.grammar = api.response_format;
  Result<std::shared_ptr<const grammar::Grammar>> forced =
      forced_tool_grammar(prompts_->tool_style().syntax, tool_offer(api), api.parallel_tool_calls);
  if (!forced.ok()) {  // a forced call's parameters schema the grammar cannot express
    error = bad_request(forced.status().message(), "tools");
    return false;
  }
  if (*forced) {
    if (gen.grammar) {
      error = bad_request("'response_format' cannot be combined with a tool_choice that requires a call",
                          "response_format");
      return false;
    }
    gen.grammar = std::move(forced).value();
  }
  return true;
}

Engine* HttpServer::read_generation_body(const httplib::ContentReader& reader, httplib::Response& res,
                                         BodyBudget& budget, std::string& body, ErrorShape shape) {
  if (std::optional<ApiError> e = read_body(reader, options_.max_body_bytes, budget, body)) {
    send_error_and_close(res, *e, shape);
    return nullptr;
  }
  Engine* eng = engine();
  if (!eng) send_error(res, loading_error(), shape);
  return eng;
}

void HttpServer::handle_generate(ApiKind kind, const httplib::ContentReader& reader, httplib::Response& res) {
  BodyBudget budget(body_bytes_in_flight_, body_bytes_in_flight_limit(options_));
  std::string body;
  Engine* eng = read_generation_body(reader, res, budget, body);
  if (!eng) return;
  const Clock::time_point arrival = Clock::now();
  ApiError error;
  std::optional<ApiRequest> api = parse_api_request(kind, body, error);
  if (!api) return send_error(res, error);
  if (std::optional<ApiError> e = unserved_model(*api)) return send_error(res, *e);
  BuiltPrompt prompt;
  GenerationRequest gen_request;
  if (!prepare(*api, prompt, gen_request, error)) return send_error(res, error);
  log_prompt(res, prompt);
  Result<std::shared_ptr<Generation>> gen = Generation::submit(*eng, metrics_, std::move(gen_request), arrival);
  if (!gen.ok()) return send_error(res, submit_error(gen.status()));
  ResponseMeta meta = response_meta(kind == ApiKind::kChat ? "chatcmpl-" : "cmpl-", *api);
  const AccessLine line{"POST", kind == ApiKind::kChat ? "/v1/chat/completions" : "/v1/completions", meta.model,
                        res.get_header_value("request-id"), arrival};
  auto writer =
      std::make_shared<ResponseWriter>(*api, std::move(meta), prompt.opens_think, prompts_->tool_style().syntax);
  if (api->echo) writer->echo(prompt.text, prompt.added_bos);
  if (api->stream) return respond_stream(std::move(gen).value(), std::move(writer), res, line);
  respond_full(std::move(gen).value(), std::move(writer), res, line);
}

std::optional<ApiError> HttpServer::unserved_model(const ApiRequest& api) const {
  if (api.model.empty() || serves_model(options_.model_names, api.model)) return std::nullopt;
  return model_not_found_error(api.model, options_.model_names);
}

ResponseMeta HttpServer::response_meta(const char* id_prefix, const ApiRequest& api) const {
  return {new_response_id(id_prefix), static_cast<int64_t>(std::time(nullptr)),
          api.model.empty() ? default_model(options_.model_names) : api.model};
}

std::optional<ToolSyntax> HttpServer::offered_tool_syntax(const ApiRequest& api) const {
  if (tool_offer(api).tools.empty()) return std::nullopt;
  return prompts_->tool_style().syntax;
}

void HttpServer::log_prompt(const httplib::Response& res, const BuiltPrompt& prompt) const {
  if (options_.log_prompts)
    log_prompt_text(res.get_header_value("request-id"), static_cast<int>(prompt.tokens.size()), prompt.text);
}

void HttpServer::respond_full(std::shared_ptr<Generation> gen, std::shared_ptr<EventWriter> writer,
                              httplib::Response& res, const AccessLine& line) {
  const Connection* client = current_connection();
  while (!gen->finished()) {
    for (const StreamEvent& ev : gen->next(kQuietClientCheck)) writer->collect(ev);
    if (!gen->finished() && client && client->peer_done_sending())
      return respond_full_to_quiet_client(std::move(gen), std::move(writer), res, line);
  }
  ApiError error;
  if (writer->failed(&error)) return send_error(res, error, writer->error_shape());
  res.set_content(json_text(writer->result(gen->usage())), "application/json");
  log_generation(line, gen->usage(), true);
}

// The client finished sending before its answer was ready: it hung up (the request must stop, freeing its KV blocks)
// or half-closed its socket and still reads (it must get the answer). Only a write can tell the two apart, so the
// answer starts now: a chunked 200 whose JSON body opens with one space per interval (JSON allows leading white
// space). A write that fails means the client is gone and cancels the request. An error found after this point
// comes as the error object under the 200 already sent.
void HttpServer::respond_full_to_quiet_client(std::shared_ptr<Generation> gen, std::shared_ptr<EventWriter> writer,
                                              httplib::Response& res, const AccessLine& line) {
  auto provider = [gen, writer](size_t, httplib::DataSink& sink) {
    if (!gen->finished())
      for (const StreamEvent& ev : gen->next(kQuietClientCheck)) writer->collect(ev);
    if (!gen->finished()) {
      if (sink.write(" ", 1)) return true;
      gen->cancel();
      return false;
    }
    ApiError error;
    const std::string body =
        json_text(writer->failed(&error) ? error_body(error, writer->error_shape()) : writer->result(gen->usage()));
    if (!sink.write(body.data(), body.size())) return false;
    sink.done();
    return true;
  };
  res.set_chunked_content_provider("application/json", std::move(provider), [gen, line](bool success) {
    if (!success) gen->cancel();
    log_generation(line, gen->usage(), success);
  });
}

void HttpServer::respond_stream(std::shared_ptr<Generation> gen, std::shared_ptr<EventWriter> writer,
                                httplib::Response& res, const AccessLine& line) {
  res.set_header("Cache-Control", "no-cache");
  res.set_header("X-Accel-Buffering", "no");
  const std::chrono::milliseconds keep_alive = options_.keep_alive;
  // A failed write means the client is gone: cancel at once so the engine frees the sequence's KV blocks.
  auto provider = [gen, writer, keep_alive](size_t, httplib::DataSink& sink) {
    const std::vector<StreamEvent> events = gen->next(keep_alive);
    std::string out = events.empty() ? writer->keep_alive(gen->usage()) : std::string();
    for (const StreamEvent& ev : events) out += writer->stream(ev, gen->usage());
    if (!out.empty() && !sink.write(out.data(), out.size())) {
      gen->cancel();
      return false;
    }
    if (writer->done() && !gen->finished()) gen->cancel();  // a choice failed: the stream ended, stop the others
    if (gen->finished() || writer->done()) sink.done();
    return true;
  };
  res.set_chunked_content_provider("text/event-stream", std::move(provider), [gen, line](bool success) {
    if (!success) gen->cancel();
    log_generation(line, gen->usage(), success);
  });
}

}  // namespace cai::server
