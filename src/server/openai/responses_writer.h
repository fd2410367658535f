// OpenAI Responses API output: one request's engine events → output items (reasoning, message, function_call,
// custom_tool_call), streamed as the API's typed events (response.created … response.completed) or collected into
// one response object; a finished response is kept in the store for previous_response_id.
#pragma once

#include <nlohmann/json.hpp>

#include <memory>
#include <optional>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "server/event_writer.h"
#include "server/openai/response_store.h"
#include "server/openai/responses_request.h"
#include "server/tools/tool_calls.h"
#include "tokenizer/reasoning_parser.h"

namespace cai::server {

// The Responses API's usage object: input_tokens (with input_tokens_details.cached_tokens), output_tokens (with
// output_tokens_details.reasoning_tokens), total_tokens.
nlohmann::json responses_usage_json(const Usage& u, int reasoning_tokens);

class ResponsesWriter : public EventWriter {
 public:
  // `opens_think`: the prompt left <think> open. `tool_syntax`: how the model writes calls, when the request offers
  // tools. `store`: where the finished response goes when the request allows it (request.store).
  ResponsesWriter(const ResponsesRequest& request, ResponseMeta meta, bool opens_think,
                  std::optional<ToolSyntax> tool_syntax, std::shared_ptr<ResponseStore> store);

  // response.created and response.in_progress first; each item's added / delta / done events; response.completed
  // (stop), response.incomplete (length) or response.failed (an engine error) last.
  std::string stream(const StreamEvent& ev, const Usage& usage) override;
  bool done() const override { return done_; }
  void collect(const StreamEvent& ev) override;
  bool failed(ApiError* error) const override;
  nlohmann::json result(const Usage& usage) override;
  std::string keep_alive(const Usage& usage) override;

 private:
  enum class Open { kNone, kReasoning, kMessage, kCall };
  using Event = std::pair<std::string, nlohmann::json>;  // type, body (without type and sequence_number)

  std::vector<Event> advance(const StreamEvent& ev);
  void open(std::vector<Event>& out, Open kind, nlohmann::json item, nlohmann::json part);
  void close(std::vector<Event>& out);
  void reasoning_delta(std::vector<Event>& out, const std::string& text);
  void text_delta(std::vector<Event>& out, const std::string& text);
  void add_answer(std::vector<Event>& out, const ToolCallStream::Delta& d);
  void end(const StreamEvent& ev);
  // The response object now (status from how it ended; in_progress until then).
  nlohmann::json response_json(const Usage& usage) const;
  // Puts the finished response into the store (once, when the request allows it and it did not fail).
  void keep(const nlohmann::json& response);
  std::string sse(const Event& e);
  std::string start(const Usage& usage);

  ResponseMeta meta_;
  nlohmann::json settings_;
  nlohmann::ordered_json conversation_;
  std::map<std::string, ResponsesTool> tools_offered_;
  bool parallel_tool_calls_;
  bool want_logprobs_;
  std::shared_ptr<ResponseStore> store_;  // null: store false
  ReasoningParser parser_;
  std::unique_ptr<ToolCallStream> tools_;

  nlohmann::json items_ = nlohmann::json::array();  // the output items so far, the open one last
  Open open_ = Open::kNone;
  std::string open_text_;                              // the open item's text (reasoning, message) or arguments (call)
  int open_call_ = -1;                                 // the ToolCallStream index of the open call
  nlohmann::json logprobs_ = nlohmann::json::array();  // the open message's token logprobs
  std::vector<ToolCall> calls_;                        // every call, for the stored conversation
  std::string answer_;                                 // the message text, for the stored conversation
  int reasoning_tokens_ = 0;
  int sequence_ = 0;
  bool started_ = false;
  bool done_ = false;
  bool kept_ = false;
  FinishReason finish_ = FinishReason::kNone;
  std::string error_;
  StatusCode error_code_ = StatusCode::kOk;
};

}  // namespace cai::server
