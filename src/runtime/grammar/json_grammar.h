// JSON as grammars: the lexical pieces (strings, numbers, literals), objects and arrays of given members, and the
// JSON-Schema compiler built on them.
#pragma once

#include <cstdint>
#include <optional>

#include <nlohmann/json.hpp>

#include "core/status.h"
#include "runtime/grammar/grammar.h"

namespace cai::grammar {

// Longest maxLength / minLength, and most minItems / maxItems, a schema may ask for (the automaton unrolls them).
inline constexpr int kMaxStringLengthBound = 4096;
inline constexpr int kMaxItemsBound = 64;
// Deepest schema nesting the compiler follows.
inline constexpr int kMaxSchemaDepth = 64;

// A JSON string of min_length..max_length characters (max_length < 0: no limit); no \u escapes are produced.
Grammar json_string(int min_length = 0, int max_length = -1);
// A JSON integer (at most 16 digits) / number (integer part, optional fraction of at most 16 digits).
Grammar json_integer();
Grammar json_number();
// A JSON integer in [lo, hi] (either bound may be absent; |bounds| <= kMaxIntegerBound, lo <= hi).
Grammar json_integer_range(std::optional<int64_t> lo, std::optional<int64_t> hi);
inline constexpr int64_t kMaxIntegerBound = 999'999'999'999'999;  // 15 digits
// The separator between members / items and between a key and its value: the byte and an optional space.
Grammar json_separator(char c);
// "{" members "}" where members are any string keys with values of `value`.
Grammar any_json_object(const Grammar& value);
// "[" items "]": between min_items and max_items (max < 0: no limit) values of `item`.
Grammar json_array(const Grammar& item, int min_items = 0, int max_items = -1);

// The compiler behind Grammar::json_schema (see grammar.h for the subset).
Result<Grammar> compile_json_schema(const nlohmann::ordered_json& schema);

}  // namespace cai::grammar
