// Server-sent events framing and JSON serialisation for the wire (invalid UTF-8 replaced, never thrown).
#pragma once

#include <nlohmann/json.hpp>

#include <string>
#include <string_view>

namespace cai::server {

// Compact JSON text; ill-formed UTF-8 in strings becomes U+FFFD instead of throwing.
std::string json_text(const nlohmann::json& j);
// One SSE event carrying `j`: "data: {...}\n\n".
std::string sse_data(const nlohmann::json& j);
// One named SSE event (Anthropic's streams name each): "event: <name>\ndata: {...}\n\n".
std::string sse_event(std::string_view name, const nlohmann::json& j);
// The stream terminator OpenAI clients wait for.
inline constexpr const char* kSseDone = "data: [DONE]\n\n";
// A comment line clients ignore; written while a request waits so that a vanished client is noticed.
inline constexpr const char* kSseKeepAlive = ": keep-alive\n\n";

}  // namespace cai::server
