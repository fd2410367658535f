// HttpTransport: the keep-alive loop over Connection, the connection cap, and shutdown that wakes every wait.
#include "server/http/http_transport.h"

#include <sys/eventfd.h>
#include <unistd.h>

#include "server/http/elastic_task_queue.h"

namespace cai::server {

HttpTransport::HttpTransport(ConnectionLimits limits) : limits_(limits), wake_fd_(::eventfd(0, EFD_CLOEXEC)) {
  // A few threads beyond the connection cap: a connection past the cap still needs one to be told 503.
  const size_t max_threads = static_cast<size_t>(std::max(1, limits_.max_connections)) + 16;
  new_task_queue = [max_threads] { return new ElasticTaskQueue(max_threads, std::chrono::seconds(30)); };
  // What httplib announces in its Keep-Alive header.
  set_keep_alive_max_count(static_cast<size_t>(std::max(1, limits_.max_requests)));
  set_keep_alive_timeout(
      std::max<time_t>(1, std::chrono::duration_cast<std::chrono::seconds>(limits_.idle_timeout).count()));
}

HttpTransport::~HttpTransport() {
  shut_down();
  if (wake_fd_ >= 0) ::close(wake_fd_);
}

void HttpTransport::shut_down() {
  shutting_down_ = true;
  if (wake_fd_ >= 0) {
    const uint64_t one = 1;
    [[maybe_unused]] const ssize_t n = ::write(wake_fd_, &one, sizeof(one));
  }
  stop();
}

bool HttpTransport::process_and_close_socket(socket_t sock) {
  serve_socket(sock);
  return true;
}

void HttpTransport::serve_socket(int fd) {
  Connection conn(fd, limits_, counters_, wake_fd_);
  struct Count {
    std::atomic<int>& n;
    ~Count() { --n; }
  } count{counters_.open};
  if (++counters_.open > limits_.max_connections) {
    ++counters_.refused_full;
    ApiError e;
    e.http_status = 503;
    e.type = "server_error";
    e.code = "too_many_connections";
    e.message = "the server has too many open connections; retry shortly";
    return conn.refuse(e, "Service Unavailable");
  }
  CurrentConnectionScope current(&conn);
  for (int i = 0; i < limits_.max_requests; ++i) {
    if (i > 0) {
      if (!conn.wait_next_request()) break;
      conn.begin_request();
    }
    const bool last = i + 1 == limits_.max_requests || shutting_down_;
    bool closed = false;
    if (!process_request(conn, last, closed, nullptr) || closed || last) break;
  }
}

}  // namespace cai::server
