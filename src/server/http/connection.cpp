// Connection: non-blocking socket I/O with deadlines, head accounting, hang-up detection.
#include "server/http/connection.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <climits>
#include <cstring>

#include <fmt/format.h>

#include "server/http/sse.h"

namespace cai::server {

namespace {

thread_local Connection* t_current = nullptr;

// "ip", port of a socket address (IPv4 or IPv6).
void describe(const sockaddr_storage& addr, std::string& ip, int& port) {
  char text[INET6_ADDRSTRLEN] = {};
  if (addr.ss_family == AF_INET) {
    const auto& a = reinterpret_cast<const sockaddr_in&>(addr);
    inet_ntop(AF_INET, &a.sin_addr, text, sizeof(text));
    port = ntohs(a.sin_port);
  } else if (addr.ss_family == AF_INET6) {
    const auto& a = reinterpret_cast<const sockaddr_in6&>(addr);
    inet_ntop(AF_INET6, &a.sin6_addr, text, sizeof(text));
    port = ntohs(a.sin6_port);
  } else {
    port = 0;
  }
  ip = text;
}

}  // namespace

Connection* current_connection() { return t_current; }

CurrentConnectionScope::CurrentConnectionScope(Connection* c) : previous_(t_current) { t_current = c; }
CurrentConnectionScope::~CurrentConnectionScope() { t_current = previous_; }

Connection::Connection(int fd, const ConnectionLimits& limits, ConnectionCounters& counters, int wake_fd)
    : fd_(fd), limits_(limits), counters_(counters), wake_fd_(wake_fd),
      head_deadline_(SteadyClock::now() + limits.header_timeout) {
  const int flags = fcntl(fd_, F_GETFL, 0);
  if (flags >= 0) fcntl(fd_, F_SETFL, flags | O_NONBLOCK);
}

Connection::~Connection() {
  // A lingering close: the client may still be sending (a body refused with 413 before it was read). Closing with
  // unread bytes would reset the connection and could destroy the answer before the client reads it, so the server
  // finishes writing, then reads and drops what comes until the client closes too (at most 1 s and 1 MiB).
  ::shutdown(fd_, SHUT_WR);
  const auto deadline = SteadyClock::now() + std::chrono::seconds(1);
  size_t dropped = 0;
  char sink[4096];
  while (dropped < (size_t(1) << 20) && wait_for(POLLIN, deadline) == Wait::kReady) {
    const ssize_t n = ::recv(fd_, sink, sizeof(sink), 0);
    if (n <= 0 && !(n < 0 && (errno == EAGAIN || errno == EINTR))) break;
    if (n > 0) dropped += static_cast<size_t>(n);
  }
  ::close(fd_);
}

void Connection::begin_request() {
  in_head_ = true;
  head_started_ = false;
  head_deadline_ = SteadyClock::now() + limits_.header_timeout;
  head_lines_ = 0;
  head_bytes_ = 0;
  line_length_ = 0;
}

Connection::Wait Connection::wait_for(short events, SteadyClock::time_point deadline) const {
  for (;;) {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - SteadyClock::now()).count();
    if (left <= 0) return Wait::kTimeout;
    pollfd fds[2] = {{fd_, events, 0}, {wake_fd_, POLLIN, 0}};
    const int n = ::poll(fds, wake_fd_ >= 0 ? 2 : 1, static_cast<int>(std::min<long long>(left, INT_MAX)));
    if (n < 0) {
      if (errno == EINTR) continue;
      return Wait::kError;
    }
    if (n == 0) continue;  // the deadline is checked above
    if (wake_fd_ >= 0 && (fds[1].revents & POLLIN)) return Wait::kStopping;
    if (fds[0].revents & POLLNVAL) return Wait::kError;
    if (fds[0].revents & (events | POLLHUP | POLLERR)) return Wait::kReady;
  }
}

SteadyClock::time_point Connection::read_deadline() const {
  return in_head_ ? head_deadline_ : SteadyClock::now() + limits_.io_timeout;
}

bool Connection::fill_buffer() {
  for (;;) {
    const ssize_t n = ::recv(fd_, buf_, sizeof(buf_), 0);
    if (n > 0) {
      buf_pos_ = 0;
      buf_len_ = static_cast<size_t>(n);
      return true;
    }
    if (n == 0) return false;  // the client finished sending
    if (errno == EINTR) continue;
    if (errno != EAGAIN && errno != EWOULDBLOCK) return false;
    switch (wait_for(POLLIN, read_deadline())) {
      case Wait::kReady: continue;
      case Wait::kTimeout:
        // A client that started a head and did not finish it in time is told so; an idle one is just closed.
        if (in_head_ && head_started_) {
          ++counters_.head_timeouts;
          ApiError e =
              bad_request(fmt::format("the request head did not arrive within {} ms", limits_.header_timeout.count()));
          e.http_status = 408;
          e.code = "request_timeout";
          refuse(e, "Request Timeout");
        }
        return false;
      case Wait::kStopping:
      case Wait::kError: return false;
    }
  }
}

bool Connection::account_head(const char* data, size_t n) {
  for (size_t i = 0; i < n && in_head_; ++i) {
    ++head_bytes_;
    if (data[i] == '\n') {
      if (line_length_ == 0 && head_lines_ > 0)
        in_head_ = false;  // the blank line that ends the head
      else if (line_length_ > 0)
        ++head_lines_;
      line_length_ = 0;
    } else if (data[i] != '\r') {
      ++line_length_;
    }
    if (in_head_ && (head_lines_ > limits_.max_header_lines || head_bytes_ > limits_.max_header_bytes)) {
      ++counters_.head_too_large;
      ApiError e = bad_request(fmt::format("the request head is over the limit of {} lines or {} bytes",
                                           limits_.max_header_lines, limits_.max_header_bytes));
      e.http_status = 431;
      e.code = "request_header_too_large";
      refuse(e, "Request Header Fields Too Large");
      return false;
    }
  }
  return true;
}

ssize_t Connection::read(char* ptr, size_t size) {
  if (failed_) return -1;
  if (buf_pos_ == buf_len_ && !fill_buffer()) return failed_ ? -1 : 0;
  head_started_ = true;
  const size_t n = std::min(size, buf_len_ - buf_pos_);
  std::memcpy(ptr, buf_ + buf_pos_, n);
  buf_pos_ += n;
  if (in_head_ && !account_head(ptr, n)) return -1;
  return static_cast<ssize_t>(n);
}

ssize_t Connection::write(const char* ptr, size_t size) {
  if (failed_) return -1;
  size_t sent = 0;
  const auto deadline = SteadyClock::now() + limits_.io_timeout;
  while (sent < size) {
    const ssize_t n = ::send(fd_, ptr + sent, size - sent, MSG_NOSIGNAL);
    if (n > 0) {
      sent += static_cast<size_t>(n);
      continue;
    }
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK) return -1;
    if (wait_for(POLLOUT, deadline) != Wait::kReady) return -1;
  }
  return static_cast<ssize_t>(size);
}

bool Connection::is_readable() const {
  return !failed_ && (buf_pos_ < buf_len_ || wait_for(POLLIN, read_deadline()) == Wait::kReady);
}

bool Connection::is_writable() const {
  if (failed_) return false;
  pollfd p{fd_, POLLOUT, 0};
  if (::poll(&p, 1, 0) < 0) return false;
  if (p.revents & (POLLERR | POLLHUP)) return false;
  return (p.revents & POLLOUT) || wait_for(POLLOUT, SteadyClock::now() + limits_.io_timeout) == Wait::kReady;
}

bool Connection::wait_next_request() {
  if (failed_) return false;
  if (buf_pos_ < buf_len_) return true;  // a pipelined request is already here
  return wait_for(POLLIN, SteadyClock::now() + limits_.idle_timeout) == Wait::kReady;
}

bool Connection::peer_done_sending() const {
  if (buf_pos_ < buf_len_) return false;
  pollfd p{fd_, POLLIN | POLLRDHUP, 0};
  if (::poll(&p, 1, 0) <= 0) return false;
  if (p.revents & (POLLRDHUP | POLLHUP | POLLERR)) return true;
  char byte;
  return ::recv(fd_, &byte, 1, MSG_PEEK) == 0;
}

void Connection::refuse(const ApiError& error, const char* reason) {
  if (failed_) return;
  const std::string body = json_text(error_json(error));
  const std::string response = fmt::format(
      "HTTP/1.1 {} {}\r\nContent-Type: application/json\r\nContent-Length: {}\r\n"
      "Connection: close\r\n{}\r\n{}",
      error.http_status, reason, body.size(), retry_later(error) ? "Retry-After: 1\r\n" : "", body);
  write(response.data(), response.size());
  failed_ = true;
}

void Connection::get_remote_ip_and_port(std::string& ip, int& port) const {
  sockaddr_storage addr{};
  socklen_t len = sizeof(addr);
  if (::getpeername(fd_, reinterpret_cast<sockaddr*>(&addr), &len) == 0) describe(addr, ip, port);
}

void Connection::get_local_ip_and_port(std::string& ip, int& port) const {
  sockaddr_storage addr{};
  socklen_t len = sizeof(addr);
  if (::getsockname(fd_, reinterpret_cast<sockaddr*>(&addr), &len) == 0) describe(addr, ip, port);
}

}  // namespace cai::server
