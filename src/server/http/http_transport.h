// HttpTransport: httplib's parsing and routing over CAI's own connections (server/connection.h). Each accepted
// socket gets a thread of an elastic pool, a head deadline and header limits, a keep-alive idle limit, and a cap on
// connections open at once (past it: 503 and close), so slow clients cannot take the server from everyone else.
#pragma once

#include <httplib.h>

#include <atomic>

#include "server/http/connection.h"

namespace cai::server {

class HttpTransport : public httplib::Server {
 public:
  explicit HttpTransport(ConnectionLimits limits);
  ~HttpTransport() override;

  // Serves one connected socket on the calling thread until it closes (taking ownership of `fd`): what each
  // accepted connection gets. Tests and the fuzzer call it on one end of a socketpair.
  void serve_socket(int fd);
  // Ends every wait on every connection, then stops listening (httplib::Server::stop joins the connection threads).
  void shut_down();
  const ConnectionCounters& counters() const { return counters_; }
  int max_connections() const { return limits_.max_connections; }

 private:
  bool process_and_close_socket(socket_t sock) override;

  ConnectionLimits limits_;
  int wake_fd_ = -1;  // an eventfd, readable once shut_down() ran
  std::atomic<bool> shutting_down_{false};
  ConnectionCounters counters_;
};

}  // namespace cai::server
