// Anthropic Messages API request schema: a /v1/messages (or /v1/messages/count_tokens) body → the ApiRequest the
// OpenAI chat route runs (messages in OpenAI form: assistant tool_calls, role "tool" results, tools as functions),
// or an ApiError naming the bad field.
#pragma once

#include <nlohmann/json.hpp>

#include <optional>
#include <string_view>

#include "server/openai/openai_request.h"

namespace cai::server {

enum class AnthropicRoute { kMessages, kCountTokens };

// Anthropic's defaults and limits.
inline constexpr double kAnthropicMaxTemperature = 1.0;
inline constexpr int kMinThinkingBudget = 1024;  // thinking.budget_tokens below this is refused, as Anthropic does

// Parses and validates a body into a chat ApiRequest (n 1). Fields this route does not know are ignored and logged once
// per name (newer clients send fields before servers know them); `max_tokens` is required on /v1/messages; `model` may
// be left out (the server's first name answers). System messages (top-level `system`, and role "system" messages
// inside `messages`) join into one system message, in order. Thinking blocks in assistant history are dropped (as
// R1's template drops reasoning); tool_use blocks become the assistant's tool_calls (content null when it has no
// text), tool_result blocks role "tool" messages (a failed one's text led by "Error: "). tools become OpenAI functions
// ({"type": "function", "function": {"name", "description", "parameters"}}); tool_choice auto / any / tool / none
// become kAuto / kRequired / kFunction / kNone, disable_parallel_tool_use clears parallel_tool_calls. thinking enabled
// sets max_reasoning_tokens to budget_tokens, disabled to 0, adaptive leaves it to output_config.effort (low 512,
// medium 2048, high 8192, max none); output_config.format sets response_format. context_management, container,
// inference_geo and an empty mcp_servers are accepted and change nothing.
std::optional<ApiRequest> parse_anthropic_request(AnthropicRoute route, std::string_view body, ApiError& error);

}  // namespace cai::server
