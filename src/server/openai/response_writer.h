// Turns one request's engine events into its OpenAI output: SSE chunks while streaming, or one JSON object at the end,
// with one choice per generated sequence (n > 1).
#pragma once

#include <nlohmann/json.hpp>

#include <optional>
#include <string>
#include <vector>

#include "cai/engine.h"
#include "server/event_writer.h"
#include "server/openai/openai_request.h"
#include "server/openai/openai_response.h"
#include "server/tools/tool_calls.h"
#include "tokenizer/reasoning_parser.h"

namespace cai::server {

class ResponseWriter : public EventWriter {
 public:
  // Chat output is split into reasoning_content / content (`opens_think`: the prompt left <think> open), and the
  // content into content / tool_calls written in `tool_syntax` when the request offers tools.
  ResponseWriter(const ApiRequest& request, ResponseMeta meta, bool opens_think,
                 ToolSyntax tool_syntax = ToolSyntax::kGeneric);

  // SSE text for one event (a choice's role chunk first for chat; its finish chunk after its final event; once every
  // choice ended: the optional usage chunk and "data: [DONE]"). An engine error or cancellation becomes an error event
  // before [DONE], ending the stream at once.
  std::string stream(const StreamEvent& ev, const Usage& usage) override;
  // Streaming: [DONE] was written (every choice ended, or one failed).
  bool done() const override { return done_; }
  // Non-streaming: add one event's text and logprobs.
  void collect(const StreamEvent& ev) override;
  // Non-streaming result after every final event: the response object, or the error a choice ended with.
  bool failed(ApiError* error) const override;
  nlohmann::json result(const Usage& usage) override;
  // Completions with echo: each choice's text starts with `prompt_text`, and with logprobs its logprobs with the
  // prompt's (choice 0's first event brings them; a BOS the server added, `added_bos`, is listed with empty text).
  void echo(std::string prompt_text, bool added_bos);

 private:
  struct Choice {
    explicit Choice(bool opens_think) : parser(opens_think) {}
    ReasoningParser parser;
    bool sent_role = false;
    size_t text_offset = 0;  // completions: bytes of text so far (logprobs text_offset)
    FinishReason finish = FinishReason::kNone;
    std::string text, reasoning;  // non-streaming accumulation
    std::vector<TokenLogprob> logprobs;
    std::optional<ToolCallStream> tools;  // with tools offered
    std::vector<ToolCall> tool_calls;     // non-streaming: the calls of the answer
    bool echoed = false;                  // echo: the prompt went out before the choice's first text
  };

  std::string stream_chat(int index, Choice& c, const StreamEvent& ev);
  std::string stream_completion(int index, Choice& c, const StreamEvent& ev);
  nlohmann::json logprobs_json(Choice& c, const std::vector<TokenLogprob>& lps);
  // Records a choice's final event; false when it ended with an error (kept for failed()).
  bool end_choice(Choice& c, const StreamEvent& ev);
  // A completion event as the client sees it: the echoed prompt before the choice's first text, nothing generated
  // with max_tokens 0.
  StreamEvent completion_view(Choice& c, const StreamEvent& ev) const;
  // The usage as reported: no completion tokens with max_tokens 0.
  Usage reported(Usage u) const;

  ApiKind kind_;
  bool want_logprobs_;
  bool include_usage_;
  ToolSyntax tool_syntax_;
  bool parallel_tool_calls_;
  bool generate_nothing_;  // max_tokens 0
  std::optional<std::string> echo_text_;
  bool echo_added_bos_ = false;
  ResponseMeta meta_;
  std::vector<Choice> choices_;
  int n_ended_ = 0;
  bool done_ = false;
  FinishReason error_finish_ = FinishReason::kNone;  // the first choice that ended without stop/length
  std::string error_;
  StatusCode error_code_ = StatusCode::kOk;
};

// The HTTP status and error object for a request the engine ended with kError or kCancelled.
ApiError engine_end_error(FinishReason finish, const std::string& message, StatusCode code);

}  // namespace cai::server
