// The model ids a server answers to (--served-model-name): each entry an exact id or a glob such as `claude-*`, so
// that clients that choose their own model ids (Claude Code's sonnet / haiku names) reach the one model served.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "server/openai/openai_request.h"

namespace cai::server {

// Whether `entry` holds glob characters (*, ?, [).
bool is_model_glob(std::string_view entry);
// Whether `id` is one of `served`: equal to an exact entry or matched by a glob entry.
bool serves_model(const std::vector<std::string>& served, const std::string& id);
// What /v1/models lists: the exact entries (a glob names no model of its own).
std::vector<std::string> listed_models(const std::vector<std::string>& served);
// The id a response names when its request gave none: the first exact entry, else the first entry.
std::string default_model(const std::vector<std::string>& served);
// 404 model_not_found for `model`, naming what the server serves.
ApiError model_not_found_error(const std::string& model, const std::vector<std::string>& served);

}  // namespace cai::server
