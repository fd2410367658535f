// Turns one request's engine events into its OpenAI output: SSE chunks while streaming, or one JSON object at the end.
#pragma once

#include <nlohmann/json.hpp>

#include <string>
#include <vector>

#include "cai/engine.h"
#include "server/openai_request.h"
#include "server/openai_response.h"
#include "tokenizer/reasoning_parser.h"

namespace cai::server {

class ResponseWriter {
 public:
  // Chat output is split into reasoning_content / content (`opens_think`: the prompt left <think> open).
  ResponseWriter(const ApiRequest& request, ResponseMeta meta, bool opens_think);

  // SSE text for one event (the role chunk first for chat; after the final event: finish chunk, optional usage
  // chunk and "data: [DONE]"). An engine error or cancellation becomes an error event before [DONE].
  std::string stream(const StreamEvent& ev, const Usage& usage);
  // Non-streaming: add one event's text and logprobs.
  void collect(const StreamEvent& ev);
  // Non-streaming result after the final event: the response object, or the error the engine ended with.
  bool failed(ApiError* error) const;
  nlohmann::json result(const Usage& usage);

 private:
  std::string stream_chat(const StreamEvent& ev);
  std::string stream_completion(const StreamEvent& ev);
  nlohmann::json logprobs_json(const std::vector<TokenLogprob>& lps);

  ApiKind kind_;
  bool want_logprobs_;
  bool include_usage_;
  ResponseMeta meta_;
  ReasoningParser parser_;
  bool sent_role_ = false;
  size_t text_offset_ = 0;  // completions: bytes of text so far (logprobs text_offset)
  FinishReason finish_ = FinishReason::kNone;
  std::string error_;
  StatusCode error_code_ = StatusCode::kOk;
  std::string text_, reasoning_;  // non-streaming accumulation
  std::vector<TokenLogprob> logprobs_;
};

// The HTTP status and error object for a request the engine ended with kError or kCancelled.
ApiError engine_end_error(FinishReason finish, const std::string& message, StatusCode code);

}  // namespace cai::server
