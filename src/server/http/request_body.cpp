// Request bodies: the bounded read and the server-wide byte budget.
#include "server/http/request_body.h"

#include <httplib.h>

#include <fmt/format.h>

namespace cai::server {

size_t body_bytes_in_flight_limit(const ServerOptions& options) {
  return options.max_body_bytes_in_flight ? options.max_body_bytes_in_flight : 16 * options.max_body_bytes;
}

ApiError bodies_in_flight_error(size_t limit) {
  ApiError e;
  e.http_status = 429;
  e.type = "rate_limit_error";
  e.code = "server_busy";
  e.message = fmt::format("the server is holding {} bytes of other request bodies, its limit; retry shortly", limit);
  return e;
}

std::optional<ApiError> read_body(const httplib::ContentReader& reader, size_t limit, BodyBudget& budget,
                                  std::string& body) {
  bool too_large = false, over_budget = false;
  const bool complete = reader([&](const char* data, size_t n) {
    too_large = n > limit - body.size();
    over_budget = !too_large && !budget.take(n);
    if (too_large || over_budget) return false;
    body.append(data, n);
    return true;
  });
  if (too_large) return body_too_large_error(limit);
  if (over_budget) return bodies_in_flight_error(budget.limit());
  if (!complete)
    return bad_request(
        "the request body could not be read (malformed chunked encoding, or the client "
        "stopped sending)");
  return std::nullopt;
}

}  // namespace cai::server
