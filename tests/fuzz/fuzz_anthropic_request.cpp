// libFuzzer target: any bytes as a /v1/messages and a /v1/messages/count_tokens body → a validated request translated
// into OpenAI-form messages, or an error in Anthropic's shape.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "server/anthropic/anthropic_request.h"
#include "server/error_shape.h"
#include "server/http/sse.h"
#include "server/tools/tool_calls.h"

namespace {

using namespace cai::server;

void check(AnthropicRoute route, std::string_view body) {
  ApiError error;
  std::optional<ApiRequest> req = parse_anthropic_request(route, body, error);
  if (!req) {
    if (error.http_status != 400 || error.message.empty()) __builtin_trap();
    (void)json_text(error_body(error, ErrorShape::kAnthropic));
    return;
  }
  const ApiRequest& api = *req;
  const auto& s = api.sampling;
  const bool sane =
      api.kind == ApiKind::kChat && api.n == 1 && !api.messages.empty() && s.temperature >= 0 && s.temperature <= 1 &&
      s.top_p > 0 && s.top_p <= 1 && s.top_k >= 0 &&
      (route == AnthropicRoute::kCountTokens || (api.max_tokens && *api.max_tokens >= 1)) &&
      api.max_reasoning_tokens >= -1 &&
      (api.tool_choice == ToolChoice::kAuto || api.tool_choice == ToolChoice::kNone || !api.tools.empty());
  if (!sane) __builtin_trap();
  for (const auto& m : api.messages) {
    const std::string& role = m["role"].get_ref<const std::string&>();
    if (!m["content"].is_string() && !(m["content"].is_null() && m.contains("tool_calls"))) __builtin_trap();
    if (role != "system" && role != "user" && role != "assistant" && role != "tool") __builtin_trap();
    if (role == "tool" && !m["tool_call_id"].is_string()) __builtin_trap();
  }
  for (const auto& t : api.tools)
    if (!is_valid_tool_name(t["function"]["name"].get<std::string>())) __builtin_trap();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size > 65536) return 0;
  const std::string_view body(reinterpret_cast<const char*>(data), size);
  check(AnthropicRoute::kMessages, body);
  check(AnthropicRoute::kCountTokens, body);
  return 0;
}
