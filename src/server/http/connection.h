// Connection: one client socket as httplib reads and writes it, under the front door's limits — a deadline for the
// whole request head (slow-drip clients cannot hold a thread), a cap on header lines and bytes, a wait limit on every
// later read and write — and a way for a handler to see that its client hung up.
#pragma once

#include <httplib.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <string>

#include "server/openai/openai_request.h"

namespace cai::server {

using SteadyClock = std::chrono::steady_clock;

struct ConnectionLimits {
  int max_connections = 512;                        // open at once; more are answered 503 and closed
  std::chrono::milliseconds header_timeout{10000};  // from connection (or request) start to the end of its head: 408
  std::chrono::milliseconds idle_timeout{5000};     // keep-alive wait for the next request
  std::chrono::milliseconds io_timeout{30000};      // longest wait for one read (body) or write
  int max_header_lines = 100;                       // request line + header fields: more → 431
  size_t max_header_bytes = 32 << 10;               // the whole head: more → 431
  int max_requests = 1000;                          // per connection, then it is closed
};

// What the front door refused, for /metrics (shared by every connection of a server).
struct ConnectionCounters {
  std::atomic<int> open{0};
  std::atomic<uint64_t> refused_full{0};    // 503: over max_connections
  std::atomic<uint64_t> head_timeouts{0};   // 408
  std::atomic<uint64_t> head_too_large{0};  // 431
};

class Connection : public httplib::Stream {
 public:
  // Takes `fd` (a connected stream socket; made non-blocking here); `wake_fd` turns readable when the server stops,
  // ending every wait at once. Refusals are counted in `counters`.
  Connection(int fd, const ConnectionLimits& limits, ConnectionCounters& counters, int wake_fd);
  ~Connection() override;
  Connection(const Connection&) = delete;
  Connection& operator=(const Connection&) = delete;

  // Arms the head deadline and counters for the next request. The first request's deadline runs from construction.
  void begin_request();
  // Waits (up to the idle timeout) for the next request's first byte; false when the client closed, went quiet or
  // the server is stopping.
  bool wait_next_request();
  // True when the client has finished sending (FIN: it hung up, or half-closed and still reads) and no request
  // bytes are left to serve. Does not wait.
  bool peer_done_sending() const;
  // Writes `error` as a complete response of its own, `reason` its status line's phrase (for refusals before httplib
  // parsed anything), and fails the connection: later reads and writes fail.
  void refuse(const ApiError& error, const char* reason);

  // httplib::Stream
  bool is_readable() const override;
  bool is_writable() const override;
  ssize_t read(char* ptr, size_t size) override;
  ssize_t write(const char* ptr, size_t size) override;
  void get_remote_ip_and_port(std::string& ip, int& port) const override;
  void get_local_ip_and_port(std::string& ip, int& port) const override;
  int socket() const override { return fd_; }

 private:
  enum class Wait { kReady, kTimeout, kStopping, kError };
  // Polls for `events` until `deadline` (and the wake fd).
  Wait wait_for(short events, SteadyClock::time_point deadline) const;
  SteadyClock::time_point read_deadline() const;
  // Counts head bytes handed to httplib; false (after answering 431) when the head is over its limits.
  bool account_head(const char* data, size_t n);
  bool fill_buffer();

  int fd_;
  const ConnectionLimits& limits_;
  ConnectionCounters& counters_;
  int wake_fd_;
  bool failed_ = false;
  // Bytes received but not yet handed to httplib.
  char buf_[4096];
  size_t buf_pos_ = 0, buf_len_ = 0;
  // The current request's head: still being read, its deadline, lines and bytes so far, length of the open line.
  bool in_head_ = true;
  bool head_started_ = false;
  SteadyClock::time_point head_deadline_;
  int head_lines_ = 0;
  size_t head_bytes_ = 0;
  size_t line_length_ = 0;
};

// The connection the calling thread is serving (set while a request is handled), or nullptr.
Connection* current_connection();

// Sets current_connection() for the lifetime of the scope.
class CurrentConnectionScope {
 public:
  explicit CurrentConnectionScope(Connection* c);
  ~CurrentConnectionScope();

 private:
  Connection* previous_;
};

}  // namespace cai::server
