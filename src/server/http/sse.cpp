// Server-sent events framing: "data: <json>\n\n" events, optionally named ("event: <name>").
#include "server/http/sse.h"

namespace cai::server {

std::string json_text(const nlohmann::json& j) {
  return j.dump(-1, ' ', /*ensure_ascii=*/false, nlohmann::json::error_handler_t::replace);
}

std::string sse_data(const nlohmann::json& j) {
  std::string out = "data: ";
  out += json_text(j);
  out += "\n\n";
  return out;
}

std::string sse_event(std::string_view name, const nlohmann::json& j) {
  std::string out = "event: ";
  out += name;
  out += '\n';
  return out + sse_data(j);
}

}  // namespace cai::server
