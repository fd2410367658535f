// JSON as grammars: the lexical pieces (strings, numbers and ranges of them), objects and arrays of given members,
// and the JSON-Schema compiler built on them.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

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
// A JSON integer (at most 16 digits) / number (integer part, optional fraction of at most 16 digits; no exponent).
Grammar json_integer();
Grammar json_number();
// Largest magnitude a bound of a range may have: 2^53 - 1, the largest integer a double holds exactly (what zod
// writes for .int()).
inline constexpr int64_t kMaxIntegerBound = 9'007'199'254'740'991;
// A JSON integer in [lo, hi] (either bound may be absent; |bounds| <= kMaxIntegerBound, lo <= hi).
Grammar json_integer_range(std::optional<int64_t> lo, std::optional<int64_t> hi);

// A decimal number exactly as written: sign, integer digits (no leading zeros) and fraction digits (no trailing
// zeros). Zero is never negative.
struct Decimal {
  bool negative = false;
  std::string integer = "0";
  std::string fraction;
};
// The exact value of a JSON number (a floating-point one as its shortest round-trip spelling); nullopt for
// anything else.
std::optional<Decimal> decimal_of(const nlohmann::ordered_json& number);
// Negative, zero or positive as a < b, a == b, a > b.
int compare_decimals(const Decimal& a, const Decimal& b);
struct NumberBound {
  Decimal value;
  bool inclusive = true;
};
// The JSON numbers (as json_number() writes them) between `lo` and `hi`, compared exactly as decimals (either bound
// may be absent; |bounds| <= kMaxIntegerBound); nullopt when no such number lies between them.
std::optional<Grammar> json_number_range(const std::optional<NumberBound>& lo, const std::optional<NumberBound>& hi);

// The separator between members / items and between a key and its value: the byte and an optional space.
Grammar json_separator(char c);
// "{" members "}" where members are any string keys with values of `value`.
Grammar any_json_object(const Grammar& value);
// "{" members "}": between min_members and max_members (max < 0: no limit) members of keys `key` (JSON strings)
// and values `value`.
Grammar json_object_of(const Grammar& key, const Grammar& value, int min_members = 0, int max_members = -1);
// "[" items "]": between min_items and max_items (max < 0: no limit) values of `item`.
Grammar json_array(const Grammar& item, int min_items = 0, int max_items = -1);

// The compiler behind Grammar::json_schema (see grammar.h for the subset).
Result<Grammar> compile_json_schema(const nlohmann::ordered_json& schema);

}  // namespace cai::grammar
