// OpenAI response schema: completion objects, streaming chunks, usage and logprobs as JSON.
#pragma once

#include <nlohmann/json.hpp>

#include <cstdint>
#include <string>
#include <vector>

#include "cai/engine.h"
#include "server/tools/tool_calls.h"

namespace cai::server {

// What every response object of one request shares.
struct ResponseMeta {
  std::string id;       // "chatcmpl-…" / "cmpl-…"
  int64_t created = 0;  // unix seconds
  std::string model;
};

struct Usage {
  int prompt_tokens = 0;
  int completion_tokens = 0;
  int cached_tokens = 0;
  int draft_tokens = 0;     // speculative decoding: drafted tokens verified (all choices)
  int accepted_tokens = 0;  // of those, accepted
};

// A fresh id with `prefix` ("chatcmpl-" or "cmpl-") and 24 random hex digits.
std::string new_response_id(const char* prefix);
nlohmann::json usage_json(const Usage& u);
// "stop" / "length"; null otherwise (running, or cancelled/error, which are reported as errors).
nlohmann::json finish_reason_json(FinishReason r);

// Chat: {"content": [{"token", "logprob", "bytes", "top_logprobs": [...]}]}.
nlohmann::json chat_logprobs_json(const std::vector<TokenLogprob>& lps);
// Completions: {"tokens", "token_logprobs", "top_logprobs", "text_offset"}; offsets start at `text_offset0`.
nlohmann::json completion_logprobs_json(const std::vector<TokenLogprob>& lps, size_t text_offset0);

// One choice of a whole response, in index order.
struct ChoiceResult {
  std::string reasoning;  // chat only; empty → no reasoning_content field
  std::string text;       // chat: message content; completions: text
  FinishReason finish = FinishReason::kNone;
  nlohmann::json logprobs;           // null when not requested
  std::vector<ToolCall> tool_calls;  // chat: the calls parsed from the answer (text holds the rest)
};

// A chat choice's finish_reason: "tool_calls" when it stopped after making calls, else finish_reason_json.
nlohmann::json chat_finish_reason_json(FinishReason r, bool made_tool_calls);
// message.tool_calls: [{"id", "type": "function", "function": {"name", "arguments"}}].
nlohmann::json tool_calls_json(const std::vector<ToolCall>& calls);
// One element of delta.tool_calls: {"index", "id", "type", "function": {"name", "arguments"}} for the first piece of
// a call, {"index", "function": {"arguments"}} for later ones.
nlohmann::json tool_call_delta_json(const ToolCallDelta& d);

// A whole chat.completion.
nlohmann::json chat_completion_json(const ResponseMeta& meta, const std::vector<ChoiceResult>& choices,
                                    const Usage& usage);
// One chat.completion.chunk for choice `index` with `delta` (e.g. {"content": "…"}).
nlohmann::json chat_chunk_json(const ResponseMeta& meta, int index, nlohmann::json delta, FinishReason finish,
                               const nlohmann::json& logprobs);
// A whole text_completion.
nlohmann::json completion_json(const ResponseMeta& meta, const std::vector<ChoiceResult>& choices, const Usage& usage);
// One streamed text_completion for choice `index`.
nlohmann::json completion_chunk_json(const ResponseMeta& meta, int index, const std::string& text, FinishReason finish,
                                     const nlohmann::json& logprobs);
// The last chunk when stream_options.include_usage is set: no choices, only usage.
nlohmann::json usage_chunk_json(const ResponseMeta& meta, bool chat, const Usage& usage);

}  // namespace cai::server
