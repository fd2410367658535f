// response_format (OpenAI structured output) → the grammar the engine constrains the answer to.
#pragma once

#include <memory>

#include <nlohmann/json.hpp>

#include "core/status.h"
#include "runtime/grammar/grammar.h"

namespace cai::server {

// {"type": "text"} → null (free text); {"type": "json_object"} → any JSON object; {"type": "json_schema",
// "json_schema": {"name": ..., "schema": {...}, "strict": bool}} → a value valid against the schema. Errors
// (kInvalidArgument) name the offending field or JSON Schema keyword.
Result<std::shared_ptr<const grammar::Grammar>> parse_response_format(const nlohmann::ordered_json& response_format);

}  // namespace cai::server
