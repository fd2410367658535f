// Grammar: a byte-level language built by composition (literal text, JSON values matching a JSON Schema, sequences,
// alternatives, repetition). The engine enforces a request's grammar while sampling (a token mask over the vocabulary,
// see token_mask.h); the server builds one from response_format, tool calling from tool_choice.
//
// Example, a forced tool call in Qwen's syntax:
//   CAI_ASSIGN_OR_RETURN(Grammar args, Grammar::json_schema(function["parameters"]));
//   Grammar call = Grammar::sequence({Grammar::literal("<tool_call>\n{\"name\": \"get_weather\", \"arguments\": "),
//                                     args, Grammar::literal("}\n</tool_call>")});
//   Grammar calls = Grammar::one_or_more(call, Grammar::literal("\n"));
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/status.h"

namespace cai::grammar {

struct Node;  // the expression tree (grammar_node.h); shared, never modified once built

// Deepest nesting of objects/arrays that json_object() and schema-less values ("{}", "type": "object" without
// properties) may produce.
inline constexpr int kMaxJsonDepth = 32;

class Grammar {
 public:
  // Exactly the bytes of `text` (UTF-8 or not; "" is the empty string).
  static Grammar literal(std::string_view text);
  // One JSON value valid against `schema`, written compactly except for an optional single space after ':' and ','.
  // Properties come in the order the schema lists them: pass an ordered_json to keep the client's order (a
  // nlohmann::json has its keys sorted).
  // Supported (docs/structured-output.md, "Supported JSON Schema", says exactly what is enforced): type, enum, const,
  // anyOf / oneOf / allOf (with sibling keywords), nullable, properties / required / additionalProperties /
  // propertyNames / minProperties / maxProperties, items / prefixItems / additionalItems (tuples) / minItems /
  // maxItems, minimum / maximum / exclusiveMinimum / exclusiveMaximum (exact, up to ±(2^53 - 1)), minLength /
  // maxLength, pattern (regex.h), format (string_formats.h), $defs / definitions / $ref (not recursive), annotations.
  // Anything else is kInvalidArgument whose message starts with the keyword, e.g. "multipleOf: ...".
  static Result<Grammar> json_schema(const nlohmann::ordered_json& schema);
  static Result<Grammar> json_schema(const nlohmann::json& schema);
  // Any JSON object (response_format json_object), nesting at most kMaxJsonDepth.
  static Grammar json_object();
  // Any JSON value, nesting at most kMaxJsonDepth.
  static Grammar json_value();
  // `parts` one after another (an empty list is the empty string).
  static Grammar sequence(std::vector<Grammar> parts);
  // Any one of `options` (at least one).
  static Grammar alternatives(std::vector<Grammar> options);
  // `item` once or more; with `separator`, the separator between consecutive items.
  static Grammar one_or_more(Grammar item, std::optional<Grammar> separator = std::nullopt);
  // `item` or nothing.
  static Grammar optional(Grammar item);

  // Whether the whole of `text` is in the language (tests, validation).
  bool matches(std::string_view text) const;

  const std::shared_ptr<const Node>& root() const { return root_; }

 private:
  explicit Grammar(std::shared_ptr<const Node> root) : root_(std::move(root)) {}
  friend struct NodeBuilder;
  std::shared_ptr<const Node> root_;
};

}  // namespace cai::grammar
