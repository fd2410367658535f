// libFuzzer target: any bytes as what a client sends on one connection (request heads, bodies of every transfer
// encoding, pipelined requests, then the client's FIN), served by the real HttpServer — connection layer, httplib's
// parser, routing, body limits, the OpenAI routes, prompt building — over a scripted engine. The server must answer
// with well-formed HTTP and stay healthy: after every input, a plain /health request on a fresh connection gets 200.
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <memory>
#include <mutex>
#include <string>
#include <thread>

#include "cai/engine.h"
#include "model/loaders/gguf.h"
#include "server/http_server.h"
#include "test_paths.h"

namespace {

using namespace cai;

// Answers every request at once from the submitting thread: a reasoning block, then a few pieces of text.
class ScriptedEngine : public Engine {
 public:
  explicit ScriptedEngine(std::unique_ptr<Tokenizer> tokenizer) {
    model_.tokenizer = std::move(tokenizer);
    model_.source = "fuzz";
  }
  Result<uint64_t> submit(GenerationRequest request, EventCallback on_event) override {
    static const char* kPieces[] = {"<think>", "hm", "</think>", "Once", " upon", " a", " time"};
    StreamEvent ev;
    ev.n_prompt_tokens = static_cast<int>(request.prompt.size());
    const int n = std::min<int>(request.max_tokens, 7);
    for (ev.index = 0; ev.index < request.n; ++ev.index) {  // each of the request's choices
      for (int i = 0; i < n; ++i) {
        ev.text = kPieces[i];
        ev.tokens = {i};
        ev.n_generated_tokens = i + 1;
        ev.logprobs.clear();
        if (request.top_logprobs >= 0) ev.logprobs.push_back({i, ev.text, -0.5f, {{"alt", -1.0f}}});
        ev.finish =
            i + 1 == n ? (n == request.max_tokens ? FinishReason::kLength : FinishReason::kStop) : FinishReason::kNone;
        on_event(ev);
      }
    }
    return ++next_id_;
  }
  void cancel(uint64_t) override {}
  EngineStats stats() const override { return {}; }
  const LoadedModel& model() const override { return model_; }
  int ctx_size() const override { return 256; }
  void shutdown() override {}

 private:
  LoadedModel model_;
  uint64_t next_id_ = 0;
};

server::HttpServer* g_server = nullptr;

// The client side of each exchange, on one long-lived thread (a thread per input spent most of the run in the
// kernel, unmapping sanitizer thread state): sends the input and FIN, then reads the answer until the server closes.
class Client {
 public:
  Client() : thread_([this] { loop(); }) {}
  // Starts a client exchange on `fd`; take the answer with wait().
  void start(int fd, const uint8_t* data, size_t size) {
    std::lock_guard lock(mu_);
    fd_ = fd;
    data_ = data;
    size_ = size;
    answer_.clear();
    cv_.notify_all();
  }
  std::string wait() {
    std::unique_lock lock(mu_);
    cv_.wait(lock, [&] { return fd_ < 0; });
    return std::move(answer_);
  }

 private:
  void loop() {
    for (;;) {
      std::unique_lock lock(mu_);
      cv_.wait(lock, [&] { return fd_ >= 0; });
      const int fd = fd_;
      lock.unlock();
      std::string answer = talk(fd, data_, size_);
      lock.lock();
      answer_ = std::move(answer);
      fd_ = -1;
      cv_.notify_all();
    }
  }
  static std::string talk(int fd, const uint8_t* data, size_t size) {
    size_t sent = 0;
    while (sent < size) {
      const ssize_t n = send(fd, data + sent, size - sent, MSG_NOSIGNAL);
      if (n <= 0) break;
      sent += static_cast<size_t>(n);
    }
    shutdown(fd, SHUT_WR);
    std::string answer;
    char buf[1 << 14];
    for (ssize_t n; (n = read(fd, buf, sizeof buf)) > 0;) answer.append(buf, static_cast<size_t>(n));
    close(fd);
    return answer;
  }

  std::mutex mu_;
  std::condition_variable cv_;
  int fd_ = -1;
  const uint8_t* data_ = nullptr;
  size_t size_ = 0;
  std::string answer_;
  std::thread thread_;  // last: starts after the members it reads
};

// Sends `input` on one end of a socketpair and FIN, serves the other end, and drains the answer concurrently.
std::string exchange(const uint8_t* data, size_t size) {
  static Client* client = new Client;  // never joined: the process ends inside libFuzzer
  int fds[2];
  if (socketpair(AF_UNIX, SOCK_STREAM, 0, fds) != 0) std::abort();
  client->start(fds[0], data, size);
  g_server->serve_socket(fds[1]);  // takes and closes fds[1]
  return client->wait();
}

}  // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  auto gguf = GgufFile::open(cai::test::data_path("models/TinyStories-656K-Q8_0.gguf"));
  if (!gguf.ok()) std::abort();
  auto tok = Tokenizer::from_gguf_metadata(gguf.value()->metadata());
  if (!tok.ok()) std::abort();
  server::ServerOptions o;
  o.max_body_bytes = 1 << 16;
  o.keep_alive = std::chrono::milliseconds(5);
  // The default deadlines: every input arrives whole with its FIN, so no read waits for them, and shorter ones failed
  // the /health check on a loaded machine (a starved thread missed a 200 ms head deadline).
  g_server = new server::HttpServer(o);  // never started: connections come through serve_socket
  if (!g_server->attach(std::make_unique<ScriptedEngine>(std::move(tok).value())).ok()) std::abort();
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string answer = exchange(data, size);
  // Whatever came in, anything that came back is HTTP responses.
  if (!answer.empty() && !answer.starts_with("HTTP/1.1 ")) __builtin_trap();
  static const std::string kHealth = "GET /health HTTP/1.1\r\nHost: x\r\n\r\n";
  const std::string health = exchange(reinterpret_cast<const uint8_t*>(kHealth.data()), kHealth.size());
  if (!health.starts_with("HTTP/1.1 200")) __builtin_trap();
  return 0;
}
