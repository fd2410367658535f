// response_format: the three types, the schema's property order as the client wrote it, refusals naming the field or
// keyword, and one compiled grammar for a repeated format.
#include "server/openai/response_format.h"

#include <gtest/gtest.h>

namespace cai::server {
namespace {

using nlohmann::ordered_json;

TEST(ResponseFormat, TextJsonObjectAndJsonSchema) {
  auto text = parse_response_format(ordered_json::parse(R"({"type": "text"})"));
  ASSERT_TRUE(text.ok());
  EXPECT_EQ(text.value(), nullptr);
  auto object = parse_response_format(ordered_json::parse(R"({"type": "json_object"})"));
  ASSERT_TRUE(object.ok() && object.value());
  EXPECT_TRUE(object.value()->matches(R"({"a": [1]})"));
  EXPECT_FALSE(object.value()->matches("[1]"));
  // "z" before "a", as written: a sorted-key JSON would give the opposite order.
  auto schema = parse_response_format(ordered_json::parse(R"({"type": "json_schema", "json_schema": {"name": "s",
      "strict": true, "schema": {"type": "object", "properties": {"z": {"type": "integer"}, "a": {"type": "boolean"}},
      "required": ["z", "a"], "additionalProperties": false}}})"));
  ASSERT_TRUE(schema.ok()) << schema.status().to_string();
  EXPECT_TRUE(schema.value()->matches(R"({"z": 1, "a": true})"));
  EXPECT_FALSE(schema.value()->matches(R"({"a": true, "z": 1})"));
  auto no_schema =
      parse_response_format(ordered_json::parse(R"({"type": "json_schema", "json_schema": {"name": "s"}})"));
  ASSERT_TRUE(no_schema.ok());
  EXPECT_TRUE(no_schema.value()->matches("\"any value\""));
}

TEST(ResponseFormat, RefusalsNameTheFieldOrKeyword) {
  const std::vector<std::pair<const char*, const char*>> cases = {
      {R"("json")", "response_format must be an object"},
      {R"({"type": "xml"})", "response_format.type"},
      {R"({"type": "json_schema"})", "response_format.json_schema"},
      {R"({"type": "json_schema", "json_schema": {"schema": {}}})", "response_format.json_schema.name"},
      {R"({"type": "json_schema", "json_schema": {"name": "s", "strict": "yes"}})",
       "response_format.json_schema.strict"},
      {R"({"type": "json_schema", "json_schema": {"name": "s", "schema": {"type": "string", "pattern": "(a)\\1"}}})",
       "response_format.json_schema.schema: pattern: a backreference"},
      {R"({"type": "json_schema", "json_schema": {"name": "s", "schema": {"type": "integer", "multipleOf": 2}}})",
       "response_format.json_schema.schema: multipleOf:"}};
  for (const auto& [rf, expected] : cases) {
    auto g = parse_response_format(ordered_json::parse(rf));
    ASSERT_FALSE(g.ok()) << rf;
    EXPECT_EQ(g.status().code(), StatusCode::kInvalidArgument);
    EXPECT_NE(g.status().message().find(expected), std::string::npos) << rf << " → " << g.status().message();
  }
}

TEST(ResponseFormat, ARepeatedFormatGetsTheSameCompiledGrammar) {
  const auto rf = ordered_json::parse(R"({"type": "json_schema", "json_schema": {"name": "n",
      "schema": {"type": "array", "items": {"type": "integer"}, "maxItems": 5}}})");
  auto a = parse_response_format(rf), b = parse_response_format(rf);
  ASSERT_TRUE(a.ok() && b.ok());
  EXPECT_EQ(a.value(), b.value());
  auto other = parse_response_format(ordered_json::parse(R"({"type": "json_object"})"));
  EXPECT_NE(other.value(), a.value());
}

}  // namespace
}  // namespace cai::server
