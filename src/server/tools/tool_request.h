// Tool calling in a chat request: validation of tools / tool_choice / parallel_tool_calls and of the tool parts of
// messages (assistant tool_calls, role "tool" results), stored into ApiRequest.
#pragma once

#include <nlohmann/json.hpp>

#include <optional>
#include <string>

#include "server/openai/openai_request.h"

namespace cai::server {

// Reads tools, tool_choice and parallel_tool_calls from the chat request `body` into `req`; the error names the bad
// field. tools: [{"type": "function", "function": {"name", "description", "parameters": object schema, "strict"}}],
// names [a-zA-Z0-9_-]{1,64} and unique. A tool_choice naming no tool of the request is an error.
std::optional<ApiError> read_tool_fields(const nlohmann::json& body, ApiRequest& req);

// The tool parts of one message `m` (`role` already read, `param` = "messages[i]") added to `out` (which holds role
// and content): an assistant's tool_calls [{"id", "type": "function", "function": {"name", "arguments": string}}]
// (content becomes null when it was null or empty) and a tool message's tool_call_id (required).
std::optional<ApiError> read_message_tool_parts(const nlohmann::json& m, const std::string& role,
                                                const std::string& param, nlohmann::ordered_json& out);

}  // namespace cai::server
