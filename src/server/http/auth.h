// API-key auth for --api-key: which routes need it and whether a request's Authorization (OpenAI) or x-api-key
// (Anthropic) header matches.
#pragma once

#include <string_view>

namespace cai::server {

// Whether `path` is an API route that --api-key protects (/v1/...); the page, /health and /metrics stay open.
bool path_needs_auth(std::string_view path);
// Whether `authorization` is "Bearer <key>" (scheme case-insensitive); the comparison takes the same time wherever
// the strings differ.
bool bearer_matches(std::string_view authorization, std::string_view key);
// Whether `given` (an x-api-key header) is `key`, in the same constant time.
bool key_matches(std::string_view given, std::string_view key);

}  // namespace cai::server
