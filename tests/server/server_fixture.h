// ServerTest: an HttpServer on a free port over a FakeEngine, and raw-socket helpers for what httplib's client
// cannot send (chunked bodies, hang-ups, malformed heads).
#pragma once

#include <arpa/inet.h>
#include <fcntl.h>
#include <httplib.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <chrono>
#include <fstream>
#include <string>
#include <vector>

#include "fake_engine.h"
#include "server/http_server.h"

namespace cai::server::test_support {

using nlohmann::json;
using test::FakeEngine;

class ServerTest : public ::testing::Test {
 protected:
  // Starts a server on a free port; attaches a FakeEngine unless `attach` is false.
  void start(ServerOptions o = {}, bool attach = true, int ctx_size = 64) {
    o.port = 0;
    if (o.model_names == ServerOptions{}.model_names) o.model_names = {"tiny"};
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

// A TCP connection to the server on this machine.
inline int connect_to(int port) {
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
inline void stream_then_disconnect(
    int port, const std::string& path = "/v1/chat/completions",
    const std::string& body = R"({"messages": [{"role": "user", "content": "Hi"}], "stream": true})") {
  const int fd = connect_to(port);
  const std::string req = "POST " + path +
                          " HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
                          "Content-Length: " +
                          std::to_string(body.size()) + "\r\n\r\n" + body;
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
inline bool response_complete(const std::string& got) {
  const size_t end = got.find("\r\n\r\n");
  if (end == std::string::npos) return false;
  const size_t cl = got.find("Content-Length: ");
  if (cl == std::string::npos || cl > end) return true;
  return got.size() >= end + 4 + std::stoul(got.substr(cl + 16));
}

// Sends `request` on a raw socket while reading, as a client that streams a large body does: stops sending once the
// server has answered or refuses more bytes. Returns the response, or what came before the server hung up.
inline std::string raw_exchange(int port, const std::string& request) {
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
      if (n > 0)
        got.append(buf, static_cast<size_t>(n));
      else if (n == 0 || errno != EAGAIN)
        break;
    }
    if (sending && (p.revents & POLLOUT)) {
      const ssize_t n = send(fd, request.data() + sent, std::min<size_t>(request.size() - sent, 1 << 16), MSG_NOSIGNAL);
      if (n > 0)
        sent += static_cast<size_t>(n);
      else if (errno != EAGAIN)
        can_send = false;
    }
  }
  close(fd);
  return got;
}

// A POST request whose body is sent with Transfer-Encoding: chunked, one chunk per piece.
inline std::string chunked_post(const std::string& path, const std::vector<std::string>& pieces) {
  std::string out = "POST " + path +
                    " HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
                    "Transfer-Encoding: chunked\r\n\r\n";
  for (const std::string& p : pieces) out += fmt::format("{:x}\r\n{}\r\n", p.size(), p);
  return out + "0\r\n\r\n";
}

// The body of a raw response.
inline std::string body_of(const std::string& response) {
  const size_t end = response.find("\r\n\r\n");
  return end == std::string::npos ? std::string() : response.substr(end + 4);
}

// Resets this process's peak resident memory to its current size (Linux: clear_refs 5); returns that size in bytes.
inline size_t reset_peak_rss() {
  std::ofstream("/proc/self/clear_refs") << "5";
  std::ifstream in("/proc/self/status");
  for (std::string line; std::getline(in, line);)
    if (line.starts_with("VmRSS:")) return std::stoul(line.substr(6)) << 10;
  return 0;
}

// This process's peak resident memory (VmHWM) in bytes.
inline size_t peak_rss() {
  std::ifstream in("/proc/self/status");
  for (std::string line; std::getline(in, line);)
    if (line.starts_with("VmHWM:")) return std::stoul(line.substr(6)) << 10;
  return 0;
}

// Reads until the server closes the connection (or `timeout` passes); everything that came.
inline std::string read_to_close(int fd, std::chrono::milliseconds timeout) {
  std::string got;
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  while (std::chrono::steady_clock::now() < deadline) {
    pollfd p{fd, POLLIN, 0};
    if (poll(&p, 1, 50) <= 0) continue;
    char buf[4096];
    const ssize_t n = read(fd, buf, sizeof buf);
    if (n <= 0) break;
    got.append(buf, static_cast<size_t>(n));
  }
  return got;
}

// The body of a raw response sent with Transfer-Encoding: chunked, its chunks joined.
inline std::string dechunked_body(const std::string& response) {
  std::string rest = body_of(response), out;
  for (;;) {
    const size_t eol = rest.find("\r\n");
    if (eol == std::string::npos) return out;
    const size_t n = std::stoul(rest.substr(0, eol), nullptr, 16);
    if (n == 0) return out;
    out += rest.substr(eol + 2, n);
    rest = rest.substr(eol + 2 + n + 2);
  }
}

}  // namespace cai::server::test_support
