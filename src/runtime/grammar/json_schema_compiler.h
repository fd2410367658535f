// The JSON-Schema compiler behind Grammar::json_schema: one class whose keyword groups live in their own files —
// json_schema.cpp (dispatch, $ref, enum/const, anyOf/oneOf), json_schema_merge.cpp (allOf and sibling keywords),
// json_schema_containers.cpp (objects, arrays, tuples), json_schema_scalars.cpp (numbers, strings).
#pragma once

#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/status.h"
#include "runtime/grammar/grammar.h"

namespace cai::grammar {

using Json = nlohmann::ordered_json;

// The member `key` of object `s`, or null.
const Json* schema_member(const Json& s, std::string_view key);
// Whether `key` constrains the value (false for annotations such as title and description).
bool is_constraining_keyword(std::string_view key);
// The names in `s`'s "type" (none when it has no "type").
Result<std::vector<std::string>> schema_types(const Json& s);
// The non-negative integer of keyword `key` (at most `most`), or nullopt when `s` lacks it.
Result<std::optional<int64_t>> schema_count(const Json& s, std::string_view key, int64_t most);

class SchemaCompiler {
 public:
  explicit SchemaCompiler(const Json& root) : root_(root) {}

  // The grammar of the values valid against `s`, nested `depth` levels deep.
  Result<Grammar> compile(const Json& s, int depth);

 private:
  // json_schema.cpp
  Result<Grammar> compile_ref(const Json& s, int depth);
  Result<Grammar> compile_values(const Json& s, const std::vector<std::string>& types, int depth);
  Result<Grammar> compile_alternatives(const Json& s, const std::string& keyword, int depth);
  Result<Grammar> compile_type(const Json& s, const std::string& type, int depth);
  // The schema `ref` ("#..." inside the root) points to; an error if it is none or already being expanded.
  Result<const Json*> resolve(const Json& ref) const;

  // json_schema_merge.cpp: one schema valid where both `a` and `b` are (false when none is), for allOf, $ref with
  // sibling keywords and the siblings of anyOf/oneOf; `keyword` names the combination in errors.
  Result<Json> merge(const Json& a, const Json& b, const std::string& keyword, int depth) const;
  // properties and additionalProperties of `a` and `b` merged into `out`.
  Status merge_properties(const Json& a, const Json& b, Json& out, const std::string& keyword, int depth) const;
  // `s` with its allOf (or its $ref and constraining siblings) merged into one schema, then compiled.
  Result<Grammar> compile_merged(const Json& s, int depth);

  // json_schema_containers.cpp
  Result<Grammar> compile_object(const Json& s, int depth);
  // The grammar of property names under propertyNames `names` (JSON strings only).
  Result<Grammar> compile_property_names(const Json& names, int depth);
  Result<Grammar> compile_array(const Json& s, int depth);

  // json_schema_scalars.cpp
  static Result<Grammar> compile_number(const Json& s, bool integer);
  static Result<Grammar> compile_string(const Json& s);

  const Json& root_;
  std::vector<std::string> refs_;            // $refs being expanded (a repeat is recursion)
  std::map<std::string, Grammar> expanded_;  // $refs compiled so far (shared, so repeated use stays linear)
};

}  // namespace cai::grammar
