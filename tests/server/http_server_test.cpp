// HttpServer over a FakeEngine: routes, SSE framing, reasoning split, every error status, auth, disconnect → cancel.
#include <arpa/inet.h>
#include <fcntl.h>
#include <httplib.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <future>

#include "fake_engine.h"
#include "server/http_server.h"

namespace cai::server {
namespace {

using nlohmann::json;
using test::FakeEngine;

class ServerTest : public ::testing::Test {
 protected:
  // Starts a server on a free port; attaches a FakeEngine unless `attach` is false.
  void start(ServerOptions o = {}, bool attach = true, int ctx_size = 64) {
    o.port = 0;
    o.model_name = "tiny";
    o.keep_alive = std::chrono::milliseconds(20);
    server_ = std::make_unique<HttpServer>(o);
    ASSERT_TRUE(server_->start().ok());
    client_ = std::make_unique<httplib::Client>("127.0.0.1", server_->port());
    client_->set_read_timeout(10, 0);
    if (attach) attach_engine(ctx_size);
  }
  void attach_engine(int ctx_size = 64) {
    auto engine = std::make_unique<FakeEngine>(ctx_size);
    engine_ = engine.get();
    Status st = server_->attach(std::move(engine));
    ASSERT_TRUE(st.ok()) << st.to_string();
  }
  httplib::Result post(const std::string& path, const std::string& body) {
    return client_->Post(path.c_str(), body, "application/json");
  }
  // The error object of a response, checking its OpenAI shape.
  static json error_of(const httplib::Result& r) {
    json j = json::parse(r->body);
    EXPECT_TRUE(j.contains("error")) << r->body;
    for (const char* key : {"message", "type", "param", "code"}) EXPECT_TRUE(j["error"].contains(key)) << key;
    return j["error"];
  }
  // Splits an SSE body into its data payloads, checking the framing ("data: ...\n\n" events, comments allowed).
  static std::vector<std::string> sse_payloads(const std::string& body) {
    std::vector<std::string> out;
    size_t pos = 0;
    while (pos < body.size()) {
      const size_t end = body.find("\n\n", pos);
      EXPECT_NE(end, std::string::npos) << "unterminated event: " << body.substr(pos);
      if (end == std::string::npos) break;
      const std::string event = body.substr(pos, end - pos);
      pos = end + 2;
      if (event.starts_with(":")) continue;
      EXPECT_TRUE(event.starts_with("data: ")) << event;
      EXPECT_EQ(event.find('\n'), std::string::npos) << event;
      out.push_back(event.substr(6));
    }
    return out;
  }

  std::unique_ptr<HttpServer> server_;
  std::unique_ptr<httplib::Client> client_;
  FakeEngine* engine_ = nullptr;
};

constexpr const char* kChat = R"({"model": "tiny", "messages": [{"role": "user", "content": "Hello"}]})";

TEST_F(ServerTest, HealthIs503WhileLoadingThen200) {
  start({}, /*attach=*/false);
  auto r = client_->Get("/health");
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 503);
  auto chat = post("/v1/chat/completions", kChat);
  EXPECT_EQ(chat->status, 503);
  EXPECT_EQ(error_of(chat)["code"], "model_loading");
  EXPECT_EQ(client_->Get("/v1/models")->status, 503);
  attach_engine();
  EXPECT_EQ(client_->Get("/health")->status, 200);
}

TEST_F(ServerTest, ModelsAndPage) {
  start();
  auto r = client_->Get("/v1/models");
  ASSERT_EQ(r->status, 200);
  json j = json::parse(r->body);
  EXPECT_EQ(j["object"], "list");
  EXPECT_EQ(j["data"][0]["id"], "tiny");
  EXPECT_EQ(j["data"][0]["max_model_len"], 64);
  EXPECT_EQ(client_->Get("/v1/models/tiny")->status, 200);
  EXPECT_EQ(client_->Get("/v1/models/other")->status, 404);
  auto page = client_->Get("/");
  ASSERT_EQ(page->status, 200);
  EXPECT_NE(page->get_header_value("Content-Type").find("text/html"), std::string::npos);
  EXPECT_NE(page->body.find("/v1/chat/completions"), std::string::npos);
  EXPECT_EQ(page->body.find("http://"), std::string::npos);  // no external resources
  EXPECT_EQ(page->body.find("https://"), std::string::npos);
}

TEST_F(ServerTest, ChatNonStreaming) {
  start();
  engine_->script.n_cached = 1;
  auto r = post("/v1/chat/completions",
                R"({"messages": [{"role": "system", "content": "Be nice."}, {"role": "user", "content": "Hello"}],
                    "temperature": 0, "top_k": 5, "seed": 7, "stop": ["END"], "max_tokens": 20})");
  ASSERT_EQ(r->status, 200) << r->body;
  json j = json::parse(r->body);
  EXPECT_EQ(j["object"], "chat.completion");
  EXPECT_TRUE(j["id"].get<std::string>().starts_with("chatcmpl-"));
  EXPECT_EQ(j["model"], "tiny");
  EXPECT_EQ(j["choices"][0]["message"]["role"], "assistant");
  EXPECT_EQ(j["choices"][0]["message"]["content"], "Once upon a time");
  EXPECT_FALSE(j["choices"][0]["message"].contains("reasoning_content"));
  EXPECT_EQ(j["choices"][0]["finish_reason"], "stop");
  ASSERT_EQ(engine_->requests().size(), 1u);
  const GenerationRequest g = engine_->requests()[0];
  const int n_prompt = static_cast<int>(g.prompt.size());
  EXPECT_EQ(j["usage"], json({{"prompt_tokens", n_prompt}, {"completion_tokens", 4}, {"total_tokens", n_prompt + 4},
                              {"prompt_tokens_details", {{"cached_tokens", 1}}}}));
  // TinyStories has no chat template: the fallback joins the contents with a blank line, after BOS.
  const Tokenizer& tok = *engine_->model().tokenizer;
  EXPECT_EQ(g.prompt, tok.encode("Be nice.\n\nHello", tok.add_bos_default()));
  EXPECT_EQ(g.max_tokens, 20);
  EXPECT_FLOAT_EQ(g.sampling.temperature, 0.0f);
  EXPECT_EQ(g.sampling.top_k, 5);
  EXPECT_EQ(g.sampling.seed, 7u);
  EXPECT_EQ(g.stop, std::vector<std::string>{"END"});
  EXPECT_EQ(g.top_logprobs, -1);
}

TEST_F(ServerTest, ChatStreamingFramingAndUsage) {
  start();
  auto r = post("/v1/chat/completions",
                R"({"messages": [{"role": "user", "content": "Hi"}], "stream": true,
                    "stream_options": {"include_usage": true}})");
  ASSERT_EQ(r->status, 200);
  EXPECT_NE(r->get_header_value("Content-Type").find("text/event-stream"), std::string::npos);
  std::vector<std::string> data = sse_payloads(r->body);
  ASSERT_GE(data.size(), 4u);
  EXPECT_EQ(data.back(), "[DONE]");
  json first = json::parse(data[0]);
  EXPECT_EQ(first["object"], "chat.completion.chunk");
  EXPECT_EQ(first["choices"][0]["delta"]["role"], "assistant");
  std::string content;
  std::string finish;
  json usage;
  for (size_t i = 0; i + 1 < data.size(); ++i) {
    json c = json::parse(data[i]);
    EXPECT_EQ(c["id"], first["id"]);
    if (c.contains("usage")) {
      EXPECT_TRUE(c["choices"].empty());
      usage = c["usage"];
      continue;
    }
    if (c["choices"][0]["delta"].contains("content")) content += c["choices"][0]["delta"]["content"];
    if (!c["choices"][0]["finish_reason"].is_null()) finish = c["choices"][0]["finish_reason"];
  }
  EXPECT_EQ(content, "Once upon a time");
  EXPECT_EQ(finish, "stop");
  EXPECT_EQ(usage["completion_tokens"], 4);
  EXPECT_EQ(usage["total_tokens"], usage["prompt_tokens"].get<int>() + 4);
}

TEST_F(ServerTest, ReasoningContentSplit) {
  start();
  engine_->script.pieces = {"<th", "ink>\nThe user", " greets.</thi", "nk>\n\nHel", "lo!"};
  auto r = post("/v1/chat/completions", kChat);
  ASSERT_EQ(r->status, 200);
  json msg = json::parse(r->body)["choices"][0]["message"];
  EXPECT_EQ(msg["reasoning_content"], "The user greets.");
  EXPECT_EQ(msg["content"], "Hello!");

  auto s = post("/v1/chat/completions", R"({"messages": [{"role": "user", "content": "Hi"}], "stream": true})");
  std::string reasoning, content;
  for (const std::string& d : sse_payloads(s->body)) {
    if (d == "[DONE]") break;
    json delta = json::parse(d)["choices"][0]["delta"];
    if (delta.contains("reasoning_content")) reasoning += delta["reasoning_content"];
    if (delta.contains("content")) content += delta["content"];
  }
  EXPECT_EQ(reasoning, "The user greets.");
  EXPECT_EQ(content, "Hello!");
}

TEST_F(ServerTest, TemplateOpenedThinkAndUnclosedReasoning) {
  ServerOptions o;
  o.chat_template = "{% for m in messages %}{{ m['content'] }}{% endfor %}{{ '<think>\\n' }}";  // as R1 distills
  start(o);
  engine_->script.pieces = {"Hmm, a greeting.", "</think>", "Hi there"};
  json msg = json::parse(post("/v1/chat/completions", kChat)->body)["choices"][0]["message"];
  EXPECT_EQ(msg["reasoning_content"], "Hmm, a greeting.");
  EXPECT_EQ(msg["content"], "Hi there");
  engine_->script.pieces = {"thinking", " forever"};
  engine_->script.finish = FinishReason::kLength;
  json full = json::parse(post("/v1/chat/completions", kChat)->body);
  EXPECT_EQ(full["choices"][0]["message"]["reasoning_content"], "thinking forever");
  EXPECT_EQ(full["choices"][0]["message"]["content"], "");
  EXPECT_EQ(full["choices"][0]["finish_reason"], "length");
  const Tokenizer& tok = *engine_->model().tokenizer;
  EXPECT_EQ(engine_->requests()[0].prompt, tok.encode("Hello<think>\n", tok.add_bos_default()));
}

TEST_F(ServerTest, Completions) {
  start();
  auto r = post("/v1/completions", R"({"prompt": "Once", "max_tokens": 4, "logprobs": 1})");
  ASSERT_EQ(r->status, 200) << r->body;
  json j = json::parse(r->body);
  EXPECT_EQ(j["object"], "text_completion");
  EXPECT_EQ(j["choices"][0]["text"], "Once upon a time");
  EXPECT_EQ(j["choices"][0]["logprobs"]["tokens"], json({"Once", " upon", " a", " time"}));
  EXPECT_EQ(j["choices"][0]["logprobs"]["text_offset"], json({0, 4, 9, 11}));
  EXPECT_EQ(j["choices"][0]["logprobs"]["top_logprobs"][1], json({{" upon", -0.5}}));
  auto ids = post("/v1/completions", R"({"prompt": [1, 2, 3], "stream": true})");
  ASSERT_EQ(ids->status, 200);
  EXPECT_EQ(engine_->requests()[1].prompt, (std::vector<int32_t>{1, 2, 3}));
  EXPECT_EQ(engine_->requests()[1].max_tokens, 16);  // OpenAI's completions default
  std::string text;
  for (const std::string& d : sse_payloads(ids->body))
    if (d != "[DONE]") text += json::parse(d)["choices"][0]["text"].get<std::string>();
  EXPECT_EQ(text, "Once upon a time");
  EXPECT_EQ(post("/v1/completions", R"({"prompt": [999999]})")->status, 400);  // outside the vocabulary
}

TEST_F(ServerTest, ChatLogprobs) {
  start();
  auto r = post("/v1/chat/completions", R"({"messages": [{"role": "user", "content": "Hi"}], "logprobs": true,
                                            "top_logprobs": 2})");
  json lp = json::parse(r->body)["choices"][0]["logprobs"]["content"];
  ASSERT_EQ(lp.size(), 4u);
  EXPECT_EQ(lp[0]["token"], "Once");
  EXPECT_EQ(lp[0]["bytes"], json({79, 110, 99, 101}));
  EXPECT_EQ(lp[0]["top_logprobs"].size(), 2u);
  EXPECT_EQ(engine_->requests()[0].top_logprobs, 2);
}

TEST_F(ServerTest, BadRequests) {
  start();
  auto bad_json = post("/v1/chat/completions", "{not json");
  EXPECT_EQ(bad_json->status, 400);
  EXPECT_EQ(error_of(bad_json)["type"], "invalid_request_error");
  auto bad_type = post("/v1/chat/completions", R"({"messages": [{"role": "user", "content": "x"}], "top_p": "a"})");
  EXPECT_EQ(bad_type->status, 400);
  EXPECT_EQ(error_of(bad_type)["param"], "top_p");
  auto unknown = post("/v1/chat/completions", R"({"messages": [{"role": "user", "content": "x"}], "wat": 1})");
  EXPECT_EQ(unknown->status, 400);
  EXPECT_EQ(error_of(unknown)["param"], "wat");
  auto n2 = post("/v1/chat/completions", R"({"messages": [{"role": "user", "content": "x"}], "n": 2})");
  EXPECT_EQ(n2->status, 400);
  auto ignored = post("/v1/chat/completions", R"({"messages": [{"role": "user", "content": "x"}], "user": "me",
                                                  "metadata": {"a": "b"}, "parallel_tool_calls": true})");
  EXPECT_EQ(ignored->status, 200);
  auto model = post("/v1/chat/completions", R"({"model": "gpt-4", "messages": [{"role": "user", "content": "x"}]})");
  EXPECT_EQ(model->status, 404);
  EXPECT_EQ(error_of(model)["code"], "model_not_found");
  EXPECT_EQ(post("/v1/chat/completions", kChat + std::string("\0garbage", 8))->status, 400);
  auto route = client_->Get("/v1/nothing");
  EXPECT_EQ(route->status, 404);
  EXPECT_EQ(error_of(route)["code"], "not_found");
}

TEST_F(ServerTest, ContextLimits) {
  start({}, true, /*ctx_size=*/8);
  const std::string long_prompt = R"({"prompt": "Once upon a time there was a little girl named Lily who loved"})";
  auto r = post("/v1/completions", long_prompt);
  EXPECT_EQ(r->status, 400);
  EXPECT_EQ(error_of(r)["code"], "context_length_exceeded");
  EXPECT_EQ(error_of(r)["param"], "prompt");
  auto too_many = post("/v1/completions", R"({"prompt": "Once", "max_tokens": 100})");
  EXPECT_EQ(too_many->status, 400);
  EXPECT_EQ(error_of(too_many)["code"], "context_length_exceeded");
  EXPECT_TRUE(engine_->requests().empty());
}

TEST_F(ServerTest, BodyTooLarge) {
  ServerOptions o;
  o.max_body_bytes = 1024;
  start(o);
  auto r = post("/v1/completions", R"({"prompt": ")" + std::string(4096, 'a') + "\"}");
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 413);
  EXPECT_EQ(error_of(r)["code"], "request_too_large");
}

TEST_F(ServerTest, ApiKey) {
  ServerOptions o;
  o.api_key = "sekret";
  start(o);
  auto missing = post("/v1/chat/completions", kChat);
  EXPECT_EQ(missing->status, 401);
  EXPECT_EQ(error_of(missing)["code"], "invalid_api_key");
  httplib::Headers wrong = {{"Authorization", "Bearer sekret2"}};
  EXPECT_EQ(client_->Get("/v1/models", wrong)->status, 401);
  httplib::Headers right = {{"Authorization", "Bearer sekret"}};
  EXPECT_EQ(client_->Get("/v1/models", right)->status, 200);
  EXPECT_EQ(client_->Post("/v1/chat/completions", right, kChat, "application/json")->status, 200);
  EXPECT_EQ(client_->Get("/health")->status, 200);  // open without a key
  EXPECT_EQ(client_->Get("/")->status, 200);
}

TEST_F(ServerTest, EngineRefusalsMapToStatuses) {
  start();
  engine_->script.submit_status = resource_exhausted("waiting queue full (256)");
  auto busy = post("/v1/chat/completions", kChat);
  EXPECT_EQ(busy->status, 429);
  EXPECT_EQ(error_of(busy)["code"], "rate_limit_exceeded");
  EXPECT_EQ(busy->get_header_value("Retry-After"), "1");
  engine_->script.submit_status = unavailable("shutting down");
  EXPECT_EQ(post("/v1/chat/completions", kChat)->status, 503);
  engine_->script.submit_status = invalid_argument("bad sampling");
  EXPECT_EQ(post("/v1/chat/completions", kChat)->status, 400);
  engine_->script.submit_status = Status();
  engine_->script.finish = FinishReason::kError;
  engine_->script.error = "device lost";
  auto failed = post("/v1/chat/completions", kChat);
  EXPECT_EQ(failed->status, 500);
  EXPECT_NE(error_of(failed)["message"].get<std::string>().find("device lost"), std::string::npos);
  auto stream = post("/v1/chat/completions", R"({"messages": [{"role": "user", "content": "x"}], "stream": true})");
  std::vector<std::string> data = sse_payloads(stream->body);
  ASSERT_GE(data.size(), 2u);
  EXPECT_EQ(data.back(), "[DONE]");
  EXPECT_TRUE(json::parse(data[data.size() - 2]).contains("error"));
  // A device that ran out of memory mid-step: 503 (try again later), and the server goes on answering.
  engine_->script.error = "simt:0: cannot allocate 4096 bytes";
  engine_->script.error_code = StatusCode::kOutOfMemory;
  auto oom = post("/v1/chat/completions", kChat);
  EXPECT_EQ(oom->status, 503);
  EXPECT_EQ(error_of(oom)["code"], "device_out_of_memory");
  engine_->script.finish = FinishReason::kStop;
  EXPECT_EQ(post("/v1/chat/completions", kChat)->status, 200);
}

// A TCP connection to the server on this machine.
int connect_to(int port) {
  const int fd = socket(AF_INET, SOCK_STREAM, 0);
  EXPECT_GE(fd, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(static_cast<uint16_t>(port));
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  EXPECT_EQ(connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr), 0);
  return fd;
}

// Opens a streaming request on a raw socket, reads the response headers, then hangs up.
void stream_then_disconnect(int port) {
  const int fd = connect_to(port);
  const std::string body = R"({"messages": [{"role": "user", "content": "Hi"}], "stream": true})";
  const std::string req = "POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
                          "Content-Length: " + std::to_string(body.size()) + "\r\n\r\n" + body;
  ASSERT_EQ(write(fd, req.data(), req.size()), static_cast<ssize_t>(req.size()));
  std::string got;
  char buf[512];
  while (got.find("\r\n\r\n") == std::string::npos) {
    const ssize_t n = read(fd, buf, sizeof buf);
    ASSERT_GT(n, 0);
    got.append(buf, static_cast<size_t>(n));
  }
  EXPECT_TRUE(got.starts_with("HTTP/1.1 200")) << got;
  close(fd);
}

// Whether `got` holds a whole response: headers and as many body bytes as its Content-Length says.
bool response_complete(const std::string& got) {
  const size_t end = got.find("\r\n\r\n");
  if (end == std::string::npos) return false;
  const size_t cl = got.find("Content-Length: ");
  if (cl == std::string::npos || cl > end) return true;
  return got.size() >= end + 4 + std::stoul(got.substr(cl + 16));
}

// Sends `request` on a raw socket while reading, as a client that streams a large body does: stops sending once the
// server has answered or refuses more bytes. Returns the response, or what came before the server hung up.
std::string raw_exchange(int port, const std::string& request) {
  const int fd = connect_to(port);
  fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK);
  std::string got;
  size_t sent = 0;
  bool can_send = true;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
  while (!response_complete(got) && std::chrono::steady_clock::now() < deadline) {
    const bool sending = can_send && sent < request.size();
    pollfd p{fd, static_cast<short>(POLLIN | (sending ? POLLOUT : 0)), 0};
    if (poll(&p, 1, 100) <= 0) continue;
    if (p.revents & (POLLIN | POLLHUP | POLLERR)) {
      char buf[4096];
      const ssize_t n = read(fd, buf, sizeof buf);
      if (n > 0) got.append(buf, static_cast<size_t>(n));
      else if (n == 0 || errno != EAGAIN) break;
    }
    if (sending && (p.revents & POLLOUT)) {
      const ssize_t n = send(fd, request.data() + sent, std::min<size_t>(request.size() - sent, 1 << 16), MSG_NOSIGNAL);
      if (n > 0) sent += static_cast<size_t>(n);
      else if (errno != EAGAIN) can_send = false;
    }
  }
  close(fd);
  return got;
}

// A POST request whose body is sent with Transfer-Encoding: chunked, one chunk per piece.
std::string chunked_post(const std::string& path, const std::vector<std::string>& pieces) {
  std::string out = "POST " + path + " HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
                    "Transfer-Encoding: chunked\r\n\r\n";
  for (const std::string& p : pieces) out += fmt::format("{:x}\r\n{}\r\n", p.size(), p);
  return out + "0\r\n\r\n";
}

// The body of a raw response.
std::string body_of(const std::string& response) {
  const size_t end = response.find("\r\n\r\n");
  return end == std::string::npos ? std::string() : response.substr(end + 4);
}

TEST_F(ServerTest, ChunkedBodyOverTheLimitIs413) {
  start();  // the default limit: 8 MiB
  std::vector<std::string> pieces(40, std::string(size_t(1) << 20, 'a'));
  pieces[0].replace(0, 12, R"({"prompt": ")");
  const auto t0 = std::chrono::steady_clock::now();
  const std::string got = raw_exchange(server_->port(), chunked_post("/v1/completions", pieces));
  EXPECT_LT(std::chrono::steady_clock::now() - t0, std::chrono::seconds(5));
  ASSERT_TRUE(got.starts_with("HTTP/1.1 413")) << got.substr(0, 200);
  EXPECT_EQ(json::parse(body_of(got))["error"]["code"], "request_too_large");
  EXPECT_TRUE(engine_->requests().empty());
  EXPECT_EQ(client_->Get("/health")->status, 200);
}

TEST_F(ServerTest, ChunkedBodyUnderTheLimitIsServed) {
  start();
  const std::string body = kChat;
  const std::string got = raw_exchange(server_->port(), chunked_post("/v1/chat/completions",
                                                                     {body.substr(0, 10), body.substr(10)}));
  ASSERT_TRUE(got.starts_with("HTTP/1.1 200")) << got;
  EXPECT_EQ(json::parse(body_of(got))["choices"][0]["message"]["content"], "Once upon a time");
}

TEST_F(ServerTest, BadOrOversizedContentLengthRefusedBeforeTheBody) {
  start();
  for (const auto& [length, status] : {std::pair{"-1", 400}, {"12abc", 400}, {"99999999999999999999999", 400},
                                       {"1000000000", 413}}) {
    const auto t0 = std::chrono::steady_clock::now();
    const std::string got = raw_exchange(server_->port(), "POST /v1/completions HTTP/1.1\r\nHost: x\r\n"
                                                          "Content-Length: " + std::string(length) + "\r\n\r\n{");
    EXPECT_LT(std::chrono::steady_clock::now() - t0, std::chrono::seconds(2)) << length;
    EXPECT_TRUE(got.starts_with("HTTP/1.1 " + std::to_string(status))) << length << ": " << got;
  }
  EXPECT_EQ(client_->Get("/health")->status, 200);
}

TEST_F(ServerTest, ClientDisconnectCancelsTheRequest) {
  start();
  engine_->script.hold = true;  // the request produces nothing until cancelled
  stream_then_disconnect(server_->port());
  EXPECT_TRUE(engine_->wait_cancelled(std::chrono::seconds(5)));
  EXPECT_EQ(engine_->cancelled(), std::vector<uint64_t>{1});
  engine_->script.hold = false;
  EXPECT_EQ(post("/v1/chat/completions", kChat)->status, 200);  // the server carries on
}

TEST_F(ServerTest, PromptTooLongForTheContextRefusedBeforeTokenizing) {
  start({}, true, /*ctx_size=*/8);
  auto r = post("/v1/completions", R"({"prompt": ")" + std::string(size_t(1) << 20, 'a') + "\"}");
  EXPECT_EQ(r->status, 400);
  EXPECT_EQ(error_of(r)["code"], "context_length_exceeded");
  EXPECT_NE(error_of(r)["message"].get<std::string>().find("bytes"), std::string::npos) << r->body;
  std::string chat = R"({"messages": [{"role": "user", "content": ")" + std::string(size_t(1) << 20, 'a') + "\"}]}";
  EXPECT_EQ(error_of(post("/v1/chat/completions", chat))["code"], "context_length_exceeded");
}

TEST_F(ServerTest, OverloadGets429WithRetryAfter) {
  ServerOptions o;
  o.n_http_threads = 70;
  start(o);
  engine_->script.max_active = 4;  // the engine's queue holds 4
  engine_->script.delay = std::chrono::milliseconds(50);
  // 64 requests at once, each answering its status and Retry-After header (or -1 and the client's error).
  std::vector<std::future<std::pair<int, std::string>>> replies;
  for (int i = 0; i < 64; ++i)
    replies.push_back(std::async(std::launch::async, [port = server_->port()] {
      httplib::Client c("127.0.0.1", port);
      c.set_read_timeout(20, 0);
      auto r = c.Post("/v1/chat/completions", kChat, "application/json");
      return r ? std::pair{r->status, r->get_header_value("Retry-After")} : std::pair{-1, to_string(r.error())};
    }));
  int n_ok = 0, n_busy = 0;
  for (auto& f : replies) {
    const auto [status, header] = f.get();
    n_ok += status == 200;
    n_busy += status == 429;
    EXPECT_TRUE(status == 200 || status == 429) << status << " " << header;
    if (status == 429) {
      EXPECT_EQ(header, "1");
    }
  }
  EXPECT_GT(n_busy, 0);
  EXPECT_GT(n_ok, 0);
}

TEST(HttpThreads, EnoughForTheEngineQueueToFill) {
  const EngineOptions e;
  EXPECT_GT(http_threads_for(e), e.max_batch + e.max_queue);  // so that 429 (queue full) comes before a stall
  EngineOptions huge;
  huge.max_queue = 1 << 30;
  EXPECT_LE(http_threads_for(huge), 4096);
}

TEST_F(ServerTest, MetricsText) {
  start();
  ASSERT_EQ(post("/v1/chat/completions", kChat)->status, 200);
  ASSERT_EQ(post("/v1/chat/completions", "{")->status, 400);
  ASSERT_EQ(client_->Get("/nope")->status, 404);
  auto r = client_->Get("/metrics");
  ASSERT_EQ(r->status, 200);
  EXPECT_NE(r->get_header_value("Content-Type").find("text/plain"), std::string::npos);
  const std::string& m = r->body;
  for (const char* line : {
           "cai_http_requests_total{endpoint=\"/v1/chat/completions\",status=\"200\"} 1\n",
           "cai_http_requests_total{endpoint=\"/v1/chat/completions\",status=\"400\"} 1\n",
           "cai_http_requests_total{endpoint=\"other\",status=\"404\"} 1\n",
           "# TYPE cai_time_to_first_token_seconds histogram\n", "cai_time_to_first_token_seconds_count 1\n",
           "cai_time_to_first_token_seconds_bucket{le=\"+Inf\"} 1\n", "cai_time_per_output_token_seconds_count 3\n",
           "cai_e2e_request_latency_seconds_count 1\n", "cai_num_requests_running 2\n",
           "cai_num_requests_waiting 1\n", "cai_kv_blocks_used 10\n", "cai_kv_blocks_free 30\n",
           "cai_kv_cache_info{dtype=\"bf16\"} 1\n", "cai_kv_cache_bytes_per_token 73728\n",
           "cai_prompt_tokens_total 123\n", "cai_generation_tokens_total 67\n",
           "cai_prefix_cache_hit_tokens_total 45\n", "cai_preemptions_total 3\n", "cai_model_loaded 1\n"})
    EXPECT_NE(m.find(line), std::string::npos) << line << "\n" << m;
  // Every non-comment line is "name{labels} value".
  std::istringstream in(m);
  for (std::string line; std::getline(in, line);) {
    if (line.starts_with("#")) continue;
    EXPECT_NE(line.rfind(' '), std::string::npos) << line;
    EXPECT_TRUE(line.starts_with("cai_")) << line;
  }
}

}  // namespace
}  // namespace cai::server
