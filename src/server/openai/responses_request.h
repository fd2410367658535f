// OpenAI Responses API request schema: a /v1/responses body → the chat ApiRequest it runs as (input items as chat
// messages, tools as functions, text.format as response_format), what the response object repeats, and the
// conversation kept for previous_response_id; or an ApiError naming the bad field.
#pragma once

#include <nlohmann/json.hpp>

#include <map>
#include <optional>
#include <string>
#include <string_view>

#include "server/openai/openai_request.h"
#include "server/openai/response_store.h"

namespace cai::server {

// A tool as the Responses API names it, behind the function name the model sees.
struct ResponsesTool {
  std::string name;
  std::string ns;       // the namespace tool it belongs to ("" at the top level)
  bool custom = false;  // a custom (freeform) tool: its calls are custom_tool_call items with a string input
};

struct ResponsesRequest {
  ApiRequest api;  // the chat request this runs as
  // The chat messages of the conversation so far, instructions left out (a later request's instructions replace them):
  // the previous response's conversation, then this request's input.
  nlohmann::ordered_json conversation = nlohmann::ordered_json::array();
  std::string previous_response_id;
  bool store = true;
  // The offered tools by the function name the model calls them with: a top-level tool's own name, a namespaced one's
  // "<namespace>__<name>".
  std::map<std::string, ResponsesTool> tools;
  // The request's settings as the response object repeats them (instructions, max_output_tokens, temperature, top_p,
  // tools, tool_choice, parallel_tool_calls, reasoning, text, metadata, truncation, store, previous_response_id, ...).
  nlohmann::ordered_json settings = nlohmann::ordered_json::object();
};

// Parses and validates a body; `store` resolves previous_response_id. Input items: messages (roles user, assistant,
// system, developer; text parts), function_call and function_call_output (images and files in an output replaced by a
// note, media_note.h), custom_tool_call and its output, reasoning (dropped, as R1's template drops reasoning). System
// and developer messages join the instructions into one system message, in order. Function and custom tools
// are offered (a custom tool as a function with one string parameter, "input"), and those of namespace tools under
// "<namespace>__<name>"; tools OpenAI runs on its own servers (web_search, file_search, ...) are left out and logged
// once. Fields this route does not know are ignored and
// logged once per name; background, conversation and prompt (stored prompt templates) are refused when set.
std::optional<ResponsesRequest> parse_responses_request(std::string_view body, ResponseStore& store, ApiError& error);

}  // namespace cai::server
