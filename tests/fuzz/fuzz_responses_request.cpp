// libFuzzer target: any bytes as a /v1/responses body → validated request or error object (with a store holding one
// conversation for previous_response_id), then, for a valid request, the same bytes as the model's output through the
// Responses writer, streamed and whole: the stream must end with one terminal event and the whole response must be
// JSON text.
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string_view>

#include "server/http/sse.h"
#include "server/openai/responses_writer.h"

namespace {

using namespace cai::server;

void check_writer(const ResponsesRequest& req, std::string_view text, size_t cut, cai::FinishReason finish) {
  auto store = std::make_shared<ResponseStore>(4, 1 << 16);
  cai::StreamEvent first, last;
  first.text = std::string(text.substr(0, cut));
  last.text = std::string(text.substr(cut));
  last.finish = finish;
  for (const bool opens_think : {false, true}) {
    ResponsesWriter streamed(req, {"resp_f", 0, "m"}, opens_think, ToolSyntax::kHermes, store);
    std::string out = streamed.stream(first, {}) + streamed.stream(last, {});
    if (!streamed.done()) __builtin_trap();
    const size_t terminal = out.rfind("event: response.");
    if (terminal == std::string::npos) __builtin_trap();
    ResponsesWriter whole(req, {"resp_f", 0, "m"}, opens_think, ToolSyntax::kDeepSeek, store);
    whole.collect(first);
    whole.collect(last);
    ApiError error;
    if (!whole.failed(&error)) (void)json_text(whole.result({}));
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size > 65536) return 0;
  const std::string_view body(reinterpret_cast<const char*>(data), size);
  ResponseStore store(4, 1 << 16);
  store.put("resp_1",
            {nlohmann::json{{"id", "resp_1"}}, nlohmann::ordered_json::parse(R"([{"role": "user", "content": "hi"},
                           {"role": "assistant", "content": null, "tool_calls": [{"id": "call_1", "type": "function",
                           "function": {"name": "f", "arguments": "{}"}}]}])")});
  ApiError error;
  std::optional<ResponsesRequest> req = parse_responses_request(body, store, error);
  if (!req) {
    if (error.http_status != 400 || error.message.empty()) __builtin_trap();
    (void)json_text(error_json(error));
    return 0;
  }
  if (req->api.kind != ApiKind::kChat || req->api.n != 1) __builtin_trap();
  const size_t cut = size == 0 ? 0 : data[size / 2] % size;
  check_writer(*req, body, cut, size % 2 ? cai::FinishReason::kStop : cai::FinishReason::kLength);
  return 0;
}
