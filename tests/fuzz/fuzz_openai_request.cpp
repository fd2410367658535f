// libFuzzer target: any bytes as a /v1/chat/completions or /v1/completions body → validated request or error object,
// then the same bytes through the streaming <think> splitter.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "server/openai_request.h"
#include "server/sse.h"
#include "tokenizer/reasoning_parser.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size < 1 || size > 65536) return 0;
  using namespace cai::server;
  const ApiKind kind = (data[0] & 1) ? ApiKind::kChat : ApiKind::kCompletion;
  const std::string_view body(reinterpret_cast<const char*>(data + 1), size - 1);
  ApiError error;
  std::optional<ApiRequest> req = parse_api_request(kind, body, error);
  if (req) {
    const auto& s = req->sampling;
    const bool sane = s.temperature >= 0 && s.temperature <= 2 && s.top_p > 0 && s.top_p <= 1 && s.top_k >= 0 &&
                      s.min_p >= 0 && s.min_p <= 1 && req->top_logprobs >= -1 && req->top_logprobs <= 20 &&
                      (!req->max_tokens || *req->max_tokens >= 1) && (req->include_usage ? req->stream : true) &&
                      (kind == ApiKind::kChat ? !req->messages.empty()
                                              : (req->prompt_is_tokens ? !req->prompt_tokens.empty() : true));
    if (!sane) __builtin_trap();
  } else {
    if (error.http_status != 400 || error.message.empty()) __builtin_trap();
    (void)json_text(error_json(error));
  }
  // The splitter: split the body at a data-chosen point; text without '<' must come out as content unchanged.
  const size_t cut = body.empty() ? 0 : data[0] % body.size();
  cai::ReasoningParser parser((data[0] & 2) != 0);
  cai::ReasoningDelta a = parser.push(body.substr(0, cut));
  cai::ReasoningDelta b = parser.push(body.substr(cut));
  cai::ReasoningDelta c = parser.finish();
  if ((data[0] & 2) == 0 && body.find('<') == std::string_view::npos && a.content + b.content + c.content != body)
    __builtin_trap();
  return 0;
}
