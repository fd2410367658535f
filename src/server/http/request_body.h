// Request bodies: reading one under the per-body limit and the server-wide budget of body bytes held at once.
#pragma once

#include <atomic>
#include <cstddef>
#include <optional>
#include <string>

#include "server/http_server.h"
#include "server/openai/openai_request.h"

namespace httplib {
class ContentReader;
}  // namespace httplib

namespace cai::server {

// Bytes of request bodies held at once, server-wide: each body takes its bytes as they arrive and gives them back when
// its request is done with them.
class BodyBudget {
 public:
  BodyBudget(std::atomic<size_t>& in_flight, size_t limit) : in_flight_(in_flight), limit_(limit) {}
  ~BodyBudget() { in_flight_ -= taken_; }
  size_t limit() const { return limit_; }
  bool take(size_t n) {
    if (in_flight_.fetch_add(n) + n > limit_) {
      in_flight_ -= n;
      return false;
    }
    taken_ += n;
    return true;
  }

 private:
  std::atomic<size_t>& in_flight_;
  const size_t limit_;
  size_t taken_ = 0;
};

// The budget's limit under `options`: max_body_bytes_in_flight, or 16 × max_body_bytes when that is 0.
size_t body_bytes_in_flight_limit(const ServerOptions& options);

// 429: the server holds `limit` bytes of other bodies.
ApiError bodies_in_flight_error(size_t limit);

// Reads the request body into `body` whatever its transfer encoding, keeping at most `limit` bytes and taking each
// from `budget`. The error to send when it is longer (413: reading stops there), when the budget runs out (429), or
// when it could not be read (400: malformed chunks, the client stopped).
std::optional<ApiError> read_body(const httplib::ContentReader& reader, size_t limit, BodyBudget& budget,
                                  std::string& body);

}  // namespace cai::server
