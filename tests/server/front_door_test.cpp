// The front door over a FakeEngine: body limits for every encoding, refusals before the body or tokenizing,
// overload (429), connection limits and deadlines (slow clients), hang-ups and half-closed clients.
#include <gtest/gtest.h>

#include <atomic>
#include <future>
#include <thread>

#include "server_fixture.h"

namespace cai::server {
namespace {

using namespace test_support;

TEST_F(ServerTest, ChunkedBodyOverTheLimitIs413) {
  start();  // the default limit: 8 MiB
  std::vector<std::string> pieces(40, std::string(size_t(1) << 20, 'a'));
  pieces[0].replace(0, 12, R"({"prompt": ")");
  const std::string request = chunked_post("/v1/completions", pieces);  // 40 MiB
  const size_t before = reset_peak_rss();
  const auto t0 = std::chrono::steady_clock::now();
  const std::string got = raw_exchange(server_->port(), request);
  EXPECT_LT(std::chrono::steady_clock::now() - t0, std::chrono::seconds(5));
  EXPECT_LT(peak_rss() - before, size_t(300) << 20);
  ASSERT_TRUE(got.starts_with("HTTP/1.1 413")) << got.substr(0, 200);
  EXPECT_EQ(json::parse(body_of(got))["error"]["code"], "request_too_large");
  EXPECT_TRUE(engine_->requests().empty());
  EXPECT_EQ(client_->Get("/health")->status, 200);
}

TEST_F(ServerTest, ChunkedBodyUnderTheLimitIsServed) {
  start();
  const std::string body = kChat;
  const std::string got =
      raw_exchange(server_->port(), chunked_post("/v1/chat/completions", {body.substr(0, 10), body.substr(10)}));
  ASSERT_TRUE(got.starts_with("HTTP/1.1 200")) << got;
  EXPECT_EQ(json::parse(body_of(got))["choices"][0]["message"]["content"], "Once upon a time");
}

TEST_F(ServerTest, BadOrOversizedContentLengthRefusedBeforeTheBody) {
  start();
  for (const auto& [length, status] :
       {std::pair{"-1", 400}, {"12abc", 400}, {"99999999999999999999999", 400}, {"1000000000", 413}}) {
    const auto t0 = std::chrono::steady_clock::now();
    const std::string got = raw_exchange(server_->port(),
                                         "POST /v1/completions HTTP/1.1\r\nHost: x\r\n"
                                         "Content-Length: " +
                                             std::string(length) + "\r\n\r\n{");
    EXPECT_LT(std::chrono::steady_clock::now() - t0, std::chrono::seconds(2)) << length;
    EXPECT_TRUE(got.starts_with("HTTP/1.1 " + std::to_string(status))) << length << ": " << got;
  }
  EXPECT_EQ(client_->Get("/health")->status, 200);
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

// A 7.5 MB prompt (1.96 M tokens) under the body limit costs little whether the context is small (refused by its
// bytes) or large enough that tokens must be counted (in slices, stopping past the context).
TEST_F(ServerTest, LargePromptCostsASmallMultipleOfItsBytes) {
  for (const int ctx_size : {4096, 1 << 20}) {
    SCOPED_TRACE(ctx_size);
    start({}, true, ctx_size);
    std::string words;
    while (words.size() < 7'500'000) words += "Once upon a time there was a little dog. ";
    const std::string body = R"({"prompt": ")" + words + R"(", "max_tokens": 1})";
    client_->set_read_timeout(120, 0);  // slow under the sanitizers
    const size_t before = reset_peak_rss();
    auto r = post("/v1/completions", body);
    ASSERT_TRUE(r);
    EXPECT_EQ(r->status, 400) << r->body.substr(0, 300);
    EXPECT_EQ(error_of(r)["code"], "context_length_exceeded");
    EXPECT_LT(peak_rss() - before, size_t(150) << 20);
    server_.reset();
  }
}

TEST_F(ServerTest, OverloadGets429WithRetryAfter) {
  start();
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

TEST_F(ServerTest, BodiesInFlightAreBoundedServerWide) {
  ServerOptions o;
  o.max_body_bytes_in_flight = 1 << 20;
  start(o);
  engine_->script.hold = true;  // the first request keeps its body until the end
  // Valid requests of 600 KB each: a short message, then white space the JSON allows.
  const std::string padded = std::string(kChat) + std::string(600'000, ' ');
  auto first = std::async(std::launch::async, [&] {
    httplib::Client c("127.0.0.1", server_->port());
    c.set_read_timeout(20, 0);
    return c.Post("/v1/chat/completions", padded, "application/json");
  });
  for (int i = 0; i < 500 && engine_->requests().empty(); ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  ASSERT_EQ(engine_->requests().size(), 1u);
  auto second = post("/v1/chat/completions", padded);
  ASSERT_TRUE(second);
  EXPECT_EQ(second->status, 429);
  EXPECT_EQ(second->get_header_value("Retry-After"), "1");
  EXPECT_EQ(error_of(second)["code"], "server_busy");
  engine_->script.hold = false;
  EXPECT_EQ(post("/v1/chat/completions", kChat)->status, 200);  // a small body still fits beside the first
  server_->stop();                                              // ends the held request
  ASSERT_TRUE(first.get());
}

// Opens a connection that sends the start of a request head and then one byte every 200 ms, never finishing it.
class SlowLoris {
 public:
  SlowLoris(int port, int n) {
    for (int i = 0; i < n; ++i) {
      fds_.push_back(connect_to(port));
      ::send(fds_.back(), "POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nX-Drip: ", 50, MSG_NOSIGNAL);
    }
    dripper_ = std::thread([this] {
      while (!stop_.load()) {
        for (int fd : fds_) ::send(fd, "a", 1, MSG_NOSIGNAL | MSG_DONTWAIT);
        std::this_thread::sleep_for(std::chrono::milliseconds(200));
      }
    });
  }
  ~SlowLoris() {
    stop_ = true;
    dripper_.join();
    for (int fd : fds_) close(fd);
  }
  const std::vector<int>& fds() const { return fds_; }

 private:
  std::vector<int> fds_;
  std::atomic<bool> stop_{false};
  std::thread dripper_;
};

TEST_F(ServerTest, SlowLorisSocketsDoNotDelayOthers) {
  start();
  engine_->script.delay = std::chrono::milliseconds(5);
  SlowLoris loris(server_->port(), 150);
  std::this_thread::sleep_for(std::chrono::milliseconds(500));  // every one holds its connection
  for (int i = 0; i < 3; ++i) {
    const auto t0 = std::chrono::steady_clock::now();
    auto health = client_->Get("/health");
    ASSERT_TRUE(health);
    EXPECT_EQ(health->status, 200);
    auto chat = post("/v1/chat/completions", kChat);
    ASSERT_TRUE(chat);
    EXPECT_EQ(chat->status, 200);
    EXPECT_LT(std::chrono::steady_clock::now() - t0, std::chrono::seconds(2));
  }
}

TEST_F(ServerTest, UnfinishedHeadGets408AtTheDeadline) {
  ServerOptions o;
  o.connections.header_timeout = std::chrono::milliseconds(800);
  start(o);
  SlowLoris loris(server_->port(), 3);
  const auto t0 = std::chrono::steady_clock::now();
  for (int fd : loris.fds()) {
    const std::string got = read_to_close(fd, std::chrono::seconds(5));
    EXPECT_TRUE(got.starts_with("HTTP/1.1 408")) << got;
    EXPECT_EQ(json::parse(body_of(got))["error"]["code"], "request_timeout");
  }
  const auto waited = std::chrono::steady_clock::now() - t0;
  EXPECT_GE(waited, std::chrono::milliseconds(700));
  EXPECT_LT(waited, std::chrono::seconds(3));
  // A connection that never sent a byte is closed at the deadline without an answer.
  const int idle = connect_to(server_->port());
  EXPECT_EQ(read_to_close(idle, std::chrono::seconds(5)), "");
  close(idle);
  EXPECT_NE(client_->Get("/metrics")->body.find("cai_http_request_head_timeouts_total 3\n"), std::string::npos);
}

TEST_F(ServerTest, TooManyHeaderLinesGet431) {
  start();
  std::string head = "GET /health HTTP/1.1\r\nHost: x\r\n";
  for (int i = 0; i < 200; ++i) head += fmt::format("X-H{}: v\r\n", i);
  const std::string got = raw_exchange(server_->port(), head + "\r\n");
  EXPECT_TRUE(got.starts_with("HTTP/1.1 431")) << got;
  EXPECT_EQ(json::parse(body_of(got))["error"]["code"], "request_header_too_large");
  std::string fine = "GET /health HTTP/1.1\r\nHost: x\r\n";
  for (int i = 0; i < 50; ++i) fine += fmt::format("X-H{}: v\r\n", i);
  EXPECT_TRUE(raw_exchange(server_->port(), fine + "\r\n").starts_with("HTTP/1.1 200"));
}

TEST_F(ServerTest, ConnectionsPastTheCapGet503) {
  ServerOptions o;
  o.connections.max_connections = 8;
  start(o);
  std::vector<int> held;
  for (int i = 0; i < 8; ++i) held.push_back(connect_to(server_->port()));
  std::this_thread::sleep_for(std::chrono::milliseconds(200));
  const int extra = connect_to(server_->port());
  const std::string got = read_to_close(extra, std::chrono::seconds(5));
  close(extra);
  EXPECT_TRUE(got.starts_with("HTTP/1.1 503")) << got;
  EXPECT_NE(got.find("Retry-After: 1"), std::string::npos) << got;
  EXPECT_EQ(json::parse(body_of(got))["error"]["code"], "too_many_connections");
  for (int fd : held) close(fd);
  std::this_thread::sleep_for(std::chrono::milliseconds(200));
  EXPECT_EQ(client_->Get("/health")->status, 200);
  const std::string metrics = client_->Get("/metrics")->body;
  EXPECT_NE(metrics.find("cai_http_connections_refused_total 1\n"), std::string::npos) << metrics;
  EXPECT_NE(metrics.find("cai_http_connections_max 8\n"), std::string::npos) << metrics;
}

TEST_F(ServerTest, IdleKeepAliveConnectionIsClosed) {
  ServerOptions o;
  o.connections.idle_timeout = std::chrono::milliseconds(300);
  start(o);
  const int fd = connect_to(server_->port());
  const std::string req = "GET /health HTTP/1.1\r\nHost: x\r\n\r\n";
  ASSERT_EQ(write(fd, req.data(), req.size()), static_cast<ssize_t>(req.size()));
  const auto t0 = std::chrono::steady_clock::now();
  const std::string got = read_to_close(fd, std::chrono::seconds(5));
  close(fd);
  EXPECT_TRUE(got.starts_with("HTTP/1.1 200")) << got;
  EXPECT_LT(std::chrono::steady_clock::now() - t0, std::chrono::seconds(2));  // closed by the server, not the wait
}

// Sends `body` to `path` on a new raw connection, then half-closes it (shutdown SHUT_WR) and reads the answer.
std::string half_closed_exchange(int port, const std::string& path, const std::string& body) {
  const int fd = connect_to(port);
  const std::string req = "POST " + path +
                          " HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
                          "Content-Length: " +
                          std::to_string(body.size()) + "\r\n\r\n" + body;
  EXPECT_EQ(write(fd, req.data(), req.size()), static_cast<ssize_t>(req.size()));
  shutdown(fd, SHUT_WR);
  std::string got = read_to_close(fd, std::chrono::seconds(10));
  close(fd);
  return got;
}

TEST_F(ServerTest, HalfClosedClientGetsItsAnswer) {
  start();
  engine_->script.delay = std::chrono::milliseconds(80);  // slower than the server's hang-up check
  const std::string full = half_closed_exchange(server_->port(), "/v1/chat/completions", kChat);
  ASSERT_TRUE(full.starts_with("HTTP/1.1 200")) << full;
  EXPECT_EQ(json::parse(dechunked_body(full))["choices"][0]["message"]["content"], "Once upon a time");
  const std::string streamed = half_closed_exchange(
      server_->port(), "/v1/chat/completions", R"({"messages": [{"role": "user", "content": "Hi"}], "stream": true})");
  ASSERT_TRUE(streamed.starts_with("HTTP/1.1 200")) << streamed;
  EXPECT_NE(dechunked_body(streamed).find("data: [DONE]"), std::string::npos) << streamed;
  EXPECT_TRUE(engine_->cancelled().empty());
}

TEST_F(ServerTest, HungUpNonStreamingRequestsStopWithinASecond) {
  start();
  engine_->script.hold = true;  // each request generates until it is cancelled
  constexpr int kClients = 64;
  std::vector<int> fds;
  for (int i = 0; i < kClients; ++i) {
    fds.push_back(connect_to(server_->port()));
    const std::string body = kChat;
    const std::string req =
        "POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
        "Content-Length: " +
        std::to_string(body.size()) + "\r\n\r\n" + body;
    ASSERT_EQ(write(fds.back(), req.data(), req.size()), static_cast<ssize_t>(req.size()));
  }
  for (int i = 0; i < 500 && engine_->requests().size() < kClients; ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  ASSERT_EQ(engine_->requests().size(), size_t{kClients});
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  EXPECT_TRUE(engine_->cancelled().empty());  // still connected: still generating
  for (int fd : fds) close(fd);
  const auto t0 = std::chrono::steady_clock::now();
  while (engine_->cancelled().size() < kClients && std::chrono::steady_clock::now() - t0 < std::chrono::seconds(5))
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  EXPECT_EQ(engine_->cancelled().size(), size_t{kClients});
  EXPECT_LT(std::chrono::steady_clock::now() - t0, std::chrono::seconds(1));
}

TEST(MaxConnections, RoomForTheEngineQueueToFill) {
  const EngineOptions e;
  EXPECT_GT(max_connections_for(e, 8), e.max_batch + e.max_queue);  // so that 429 (queue full) comes before 503
  EXPECT_GE(max_connections_for(e, 600), 600);
}

}  // namespace
}  // namespace cai::server
