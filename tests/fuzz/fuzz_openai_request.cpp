// libFuzzer target: any bytes as a /v1/chat/completions and a /v1/completions body → validated request or error
// object, then the same bytes through the streaming <think> splitter.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "server/openai/openai_request.h"
#include "server/http/sse.h"
#include "tokenizer/reasoning_parser.h"

namespace {

using namespace cai::server;

void check_request(ApiKind kind, std::string_view body) {
  ApiError error;
  std::optional<ApiRequest> req = parse_api_request(kind, body, error);
  if (!req) {
    if (error.http_status != 400 || error.message.empty()) __builtin_trap();
    (void)json_text(error_json(error));
    return;
  }
  const auto& s = req->sampling;
  const bool sane =
      s.temperature >= 0 && s.temperature <= 2 && s.top_p > 0 && s.top_p <= 1 && s.top_k >= 0 && s.min_p >= 0 &&
      s.min_p <= 1 && req->top_logprobs >= -1 && req->top_logprobs <= 20 &&
      (!req->max_tokens || *req->max_tokens >= 1) && (!req->include_usage || req->stream) &&
      (kind == ApiKind::kChat ? !req->messages.empty() : (!req->prompt_is_tokens || !req->prompt_tokens.empty()));
  if (!sane) __builtin_trap();
}

// Splits `text` at `cut`; without a prompt-opened <think>, text with no '<' must come out as content unchanged.
void check_splitter(std::string_view text, size_t cut, bool opened) {
  cai::ReasoningParser parser(opened);
  cai::ReasoningDelta a = parser.push(text.substr(0, cut));
  cai::ReasoningDelta b = parser.push(text.substr(cut));
  cai::ReasoningDelta c = parser.finish();
  if (!opened && text.find('<') == std::string_view::npos && a.content + b.content + c.content != text)
    __builtin_trap();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size > 65536) return 0;
  const std::string_view body(reinterpret_cast<const char*>(data), size);
  check_request(ApiKind::kChat, body);
  check_request(ApiKind::kCompletion, body);
  const size_t cut = size == 0 ? 0 : data[size / 2] % size;
  check_splitter(body, cut, false);
  check_splitter(body, cut, true);
  return 0;
}
