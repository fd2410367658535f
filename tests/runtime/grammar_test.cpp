// Grammar and the JSON-Schema compiler: hand-written strings each schema must accept or refuse, integer ranges
// checked against every value in a window, composition for tool calls, and refused keywords named in the error.
#include "runtime/grammar/grammar.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "grammar_test_util.h"

namespace cai::grammar {
namespace {

using nlohmann::json;

using test::expect_language;
using test::schema;

TEST(JsonSchemaGrammar, ObjectWithRequiredAndOptionalProperties) {
  const Grammar g = schema(R"({"type": "object", "properties": {
      "name": {"type": "string", "maxLength": 5},
      "age": {"type": "integer", "minimum": 0, "maximum": 120},
      "tags": {"type": "array", "items": {"enum": ["a", "b"]}}},
    "required": ["name", "age"], "additionalProperties": false})");
  expect_language(g,
                  {R"({"name":"Bo","age":7})", R"({"name": "Bo", "age": 7})", R"({"name":"","age":120,"tags":[]})",
                   R"({"name":"abcde","age":0,"tags":["a", "b","a"]})"},
                  {R"({"age":7,"name":"Bo"})",      // schema order only
                   R"({"name":"Bo"})",              // age is required
                   R"({"name":"abcdef","age":7})",  // longer than maxLength
                   R"({"name":"Bo","age":121})", R"({"name":"Bo","age":-1})", R"({"name":"Bo","age":007})",
                   R"({"name":"Bo","age":7,"x":1})",  // no additional properties
                   R"({"name":"Bo","age":7,"tags":["c"]})", R"({"name":"Bo","age":7} )", R"({"name":"Bo","age":7)",
                   R"({"name":"Bo",  "age":7})",  // one space at most after a separator
                   R"({ "name":"Bo","age":7})"});
}

TEST(JsonSchemaGrammar, AllOptionalPropertiesMayBeLeftOut) {
  const Grammar g = schema(R"({"properties": {"a": {"type": "boolean"}, "b": {"type": "null"}}})");
  expect_language(g, {"{}", R"({"a":true})", R"({"b":null})", R"({"a":false, "b":null})"},
                  {R"({,"b":null})", R"({"a":true,})", R"({"b":null,"a":true})", R"({"a":1})"});
}

TEST(JsonSchemaGrammar, StringsAreWellFormedJsonAndUtf8) {
  const Grammar g = schema(R"({"type": "string", "minLength": 1, "maxLength": 2})");
  expect_language(g, {R"("a")", R"("ab")", R"("\"\\")", R"("\n")", "\"\xC3\xA9\xE2\x82\xAC\"", "\"\xF0\x9F\x98\x80\""},
                  {R"("")", R"("abc")", R"("\q")", "\"a\nb\"", "\"\xC0\x80\"", "\"\xED\xA0\x80\"", "\"\xC3\"",
                   R"("\u0041")", R"(abc)", R"('a')"});
  expect_language(schema(R"({"type": "string"})"), {R"("")", R"("a long string, with \"quotes\"")"}, {R"("x)"});
}

TEST(JsonSchemaGrammar, NumbersIntegersBooleansNull) {
  expect_language(schema(R"({"type": "number"})"), {"0", "-0", "1.5", "-12.25", "1234567890"},
                  {"1.", ".5", "01", "+1", "1e5", "--1", "0x10", ""});
  expect_language(schema(R"({"type": "integer"})"), {"0", "-7", "42"}, {"1.0", "-", "00"});
  expect_language(schema(R"({"type": ["boolean", "null"]})"), {"true", "false", "null"}, {"True", "nul", "0"});
}

TEST(JsonSchemaGrammar, IntegerRangesMatchExactlyTheValuesInside) {
  struct Range {
    const char* schema;
    int64_t lo, hi;  // inclusive; the window below covers what lies outside
  };
  const std::vector<Range> ranges = {{R"({"type": "integer", "minimum": 0, "maximum": 120})", 0, 120},
                                     {R"({"type": "integer", "minimum": -35, "maximum": 7})", -35, 7},
                                     {R"({"type": "integer", "minimum": -999, "maximum": -100})", -999, -100},
                                     {R"({"type": "integer", "minimum": 17})", 17, INT64_MAX},
                                     {R"({"type": "integer", "maximum": -3})", INT64_MIN, -3},
                                     {R"({"type": "number", "minimum": 1.5, "maximum": 1099.9})", 2, 1099},
                                     {R"({"type": "integer", "minimum": 95, "maximum": 1005})", 95, 1005}};
  for (const Range& r : ranges) {
    const Grammar g = schema(r.schema);
    for (int64_t v = -1200; v <= 1200; ++v)
      ASSERT_EQ(g.matches(std::to_string(v)), v >= r.lo && v <= r.hi) << r.schema << " value " << v;
  }
}

TEST(JsonSchemaGrammar, ArraysEnumsConstAnyOf) {
  expect_language(schema(R"({"type": "array", "items": {"type": "integer"}, "minItems": 1, "maxItems": 3})"),
                  {"[1]", "[1, 2,3]", "[-4,0]"}, {"[]", "[1,2,3,4]", "[1,]", "[,1]", "[1 ,2]"});
  expect_language(schema(R"({"enum": ["a", 1, null, {"k": [1]}]})"), {R"("a")", "1", "null", R"({"k":[1]})"},
                  {R"("b")", "2", R"({"k": [1]})"});
  expect_language(schema(R"({"const": "fixed"})"), {R"("fixed")"}, {R"("other")"});
  expect_language(schema(R"({"anyOf": [{"type": "integer"}, {"type": "object", "properties": {"x": {"const": 1}},
                                        "required": ["x"]}]})"),
                  {"5", R"({"x":1})"}, {R"({"x":2})", "{}", R"("5")"});
}

TEST(JsonSchemaGrammar, DefinitionsAndReferences) {
  const Grammar g = schema(R"({"$defs": {"point": {"type": "object", "properties": {"x": {"type": "integer"},
      "y": {"type": "integer"}}, "required": ["x", "y"]}},
    "type": "array", "items": {"$ref": "#/$defs/point"}, "maxItems": 2})");
  expect_language(g, {"[]", R"([{"x":1,"y":2}])", R"([{"x":1,"y":2}, {"x":-3,"y":0}])"},
                  {R"([{"x":1}])", R"([{"x":1,"y":2},{"x":1,"y":2},{"x":1,"y":2}])"});
}

TEST(JsonSchemaGrammar, AnyJsonObjectAndValue) {
  const Grammar obj = Grammar::json_object();
  expect_language(obj, {"{}", R"({"a":[1,{"b":null}], "c": "d"})", R"({"a":{"b":{"c":[true,false,-1.5]}}})"},
                  {"[]", "1", R"({"a"})", R"({a:1})", R"({"a":1,})", "{} "});
  std::string deep, too_deep;
  for (int i = 0; i < 20; ++i) deep += "{\"a\":";
  deep += "1" + std::string(20, '}');
  for (int i = 0; i < 40; ++i) too_deep += "[";
  too_deep += std::string(40, ']');
  EXPECT_TRUE(obj.matches(deep));
  EXPECT_FALSE(Grammar::json_value().matches(too_deep));  // deeper than kMaxJsonDepth
  EXPECT_TRUE(schema("{}").matches("[1, \"x\"]"));
  EXPECT_TRUE(schema(R"({"type": "object"})").matches(R"({"any":["thing"]})"));
}

TEST(GrammarComposition, ToolCallsInQwenSyntax) {
  const Grammar args =
      schema(R"({"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]})");
  const Grammar call = Grammar::sequence({Grammar::literal("<tool_call>\n{\"name\": \"get_weather\", \"arguments\": "),
                                          args, Grammar::literal("}\n</tool_call>")});
  const Grammar other =
      Grammar::sequence({Grammar::literal("<tool_call>\n{\"name\": \"now\", \"arguments\": "),
                         schema(R"({"type": "object", "properties": {}, "additionalProperties": false})"),
                         Grammar::literal("}\n</tool_call>")});
  const Grammar calls = Grammar::one_or_more(Grammar::alternatives({call, other}), Grammar::literal("\n"));
  const std::string a = "<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\":\"Paris\"}}\n</tool_call>";
  const std::string b = "<tool_call>\n{\"name\": \"now\", \"arguments\": {}}\n</tool_call>";
  expect_language(calls, {a, b, a + "\n" + b + "\n" + a},
                  {a + b, a + "\n", "<tool_call>\n{\"name\": \"now\", \"arguments\": {\"city\":\"x\"}}\n</tool_call>"});
  expect_language(Grammar::sequence({Grammar::literal("x"), Grammar::optional(Grammar::literal("y"))}), {"x", "xy"},
                  {"", "y", "xyy"});
}

TEST(JsonSchemaGrammar, UnsupportedKeywordsAreRefusedByName) {
  const std::vector<std::pair<const char*, std::string>> cases = {
      {R"({"type": "string", "pattern": "(a)\\1"})", "pattern"},
      {R"({"type": "string", "format": 7})", "format"},
      {R"({"oneOf": []})", "oneOf"},
      {R"({"anyOf": [{"type": "string"}], "oneOf": [{"type": "string"}]})", "oneOf"},
      {R"({"allOf": [{"type": "string"}, {"type": "integer"}]})", "allOf"},
      {R"({"not": {"type": "string"}})", "not"},
      {R"({"if": {"type": "string"}, "then": {"minLength": 1}})", "if"},
      {R"({"type": "integer", "multipleOf": 5})", "multipleOf"},
      {R"({"type": "object", "patternProperties": {"^a": {}}})", "patternProperties"},
      {R"({"type": "array", "contains": {"type": "string"}})", "contains"},
      {R"({"type": "integer", "exclusiveMinimum": "0"})", "exclusiveMinimum"},
      {R"({"type": "object", "properties": {"a": {"type": "array", "uniqueItems": true}}})", "uniqueItems"},
      {R"({"type": "array", "prefixItems": {"type": "string"}})", "prefixItems"},
      {R"({"type": "array", "prefixItems": [{"type": "string"}], "items": [{"type": "string"}]})", "items"},
      {R"({"type": "strung"})", "type"},
      {R"({"type": "string", "maxLength": 100000})", "maxLength"},
      {R"({"type": "array", "maxItems": 1000})", "maxItems"},
      {R"({"type": "integer", "minimum": 5, "maximum": 4})", "minimum"},
      {R"({"type": "integer", "minimum": 1e17})", "minimum"},
      {R"({"type": "number", "exclusiveMinimum": 1, "exclusiveMaximum": 1})", "exclusiveMinimum"},
      {R"({"type": "object", "properties": {"a": {}}, "required": ["b"], "additionalProperties": false})", "required"},
      {R"({"$defs": {"n": {"type": "array", "items": {"$ref": "#/$defs/n"}}}, "$ref": "#/$defs/n"})", "$ref"},
      {R"({"$ref": "#/$defs/missing"})", "$ref"},
      {R"({"$ref": "https://example.com/schema"})", "$ref"},
      {"false", "false"},
      {"7", "schema"}};
  for (const auto& [text, keyword] : cases) test::expect_refused(text, keyword);
}

TEST(JsonSchemaGrammar, ExponentialReferenceExpansionIsRefused) {
  // Each definition uses the previous one four times: 4^20 copies once expanded.
  json defs = json::object();
  defs["d0"] = {{"type", "string"}, {"maxLength", 64}};
  for (int i = 1; i <= 20; ++i) {
    const std::string prev = "#/$defs/d" + std::to_string(i - 1);
    defs["d" + std::to_string(i)] = {{"type", "array"}, {"items", {{"$ref", prev}}}, {"minItems", 4}, {"maxItems", 4}};
  }
  Result<Grammar> g = Grammar::json_schema(json{{"$defs", defs}, {"$ref", "#/$defs/d20"}});
  ASSERT_FALSE(g.ok());
  EXPECT_EQ(g.status().message().rfind("schema:", 0), 0u) << g.status().message();
}

}  // namespace
}  // namespace cai::grammar
