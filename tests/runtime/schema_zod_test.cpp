// Whole schemas as zod 4 (z.toJSONSchema), Pydantic v2 (model_json_schema) and the AI SDK (zod-to-json-schema,
// draft 7) write them, and the keywords they bring: oneOf / discriminated unions with sibling keywords, records
// (propertyNames, additionalProperties as a schema), tuples (prefixItems, items arrays), allOf, nullable.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "grammar_test_util.h"
#include "runtime/grammar/grammar.h"

namespace cai::grammar {
namespace {

using test::expect_language;
using test::expect_refused;
using test::schema;

// zod 4: z.discriminatedUnion("kind", [circle, square]).
constexpr const char* kShape = R"({"oneOf": [
    {"type": "object", "properties": {"kind": {"type": "string", "const": "circle"}, "radius": {"type": "number"}},
     "required": ["kind", "radius"], "additionalProperties": false},
    {"type": "object", "properties": {"kind": {"type": "string", "const": "square"}, "side": {"type": "number"}},
     "required": ["kind", "side"], "additionalProperties": false}]})";

TEST(JsonSchemaComposition, OneOfIsADiscriminatedUnion) {
  expect_language(schema(kShape), {R"({"kind":"circle","radius":1.5})", R"({"kind": "square", "side": 2})"},
                  {R"({"kind":"circle","side":2})", R"({"kind":"triangle","side":2})", R"({"radius":1})"});
  // Sibling keywords apply to every alternative: "type": "object" and annotations are harmless, a type that rules
  // an alternative out drops it.
  expect_language(schema(R"({"type": "object", "description": "a shape", "anyOf": [
                      {"properties": {"a": {"type": "integer"}}, "required": ["a"]},
                      {"type": "string"}]})"),
                  {R"({"a":1})"}, {R"("x")", "{}"});
  expect_language(schema(R"({"type": "object", "required": ["id"], "properties": {"id": {"type": "integer"}},
                             "oneOf": [{"properties": {"t": {"const": "a"}}, "required": ["t"]},
                                       {"properties": {"u": {"type": "boolean"}}}]})"),
                  {R"({"id":1,"t":"a"})", R"({"id":2,"u":true})", R"({"id":3})"}, {R"({"t":"a"})"});
  expect_refused(R"({"type": "integer", "anyOf": [{"type": "string"}, {"type": "null"}]})", "anyOf", "no alternative");
}

TEST(JsonSchemaComposition, AllOfRefSiblingsAndNullable) {
  const std::string defs = R"("$defs": {"Base": {"type": "object", "properties": {"id": {"type": "integer"}},
                                         "required": ["id"]}})";
  // Pydantic v1 / OpenAPI style: allOf with one $ref and a description.
  expect_language(schema("{" + defs + R"(, "allOf": [{"$ref": "#/$defs/Base"}], "description": "x"})"), {R"({"id":1})"},
                  {"{}"});
  // zod's .and(): the objects' properties and required lists merge.
  expect_language(schema("{" + defs + R"(, "allOf": [{"$ref": "#/$defs/Base"}, {"type": "object",
                                "properties": {"name": {"type": "string"}}, "required": ["name"]}]})"),
                  {R"({"id":1,"name":"n"})"}, {R"({"id":1})", R"({"name":"n"})"});
  // A property that one side's additionalProperties: false forbids can never appear.
  expect_language(schema(R"({"allOf": [{"properties": {"a": {"type": "integer"}}, "additionalProperties": false},
                                       {"properties": {"b": {"type": "integer"}}}]})"),
                  {"{}", R"({"a":1})"}, {R"({"b":1})"});
  // A $ref with constraining siblings (2020-12) and zod's stacked patterns.
  expect_language(schema("{" + defs + R"(, "$ref": "#/$defs/Base", "properties": {"id": {"maximum": 3}}})"),
                  {R"({"id":3})"}, {R"({"id":4})"});
  expect_language(schema(R"({"type": "string", "allOf": [{"pattern": "^a"}, {"pattern": "b$"}]})"),
                  {R"("ab")", R"("axb")"}, {R"("a")", R"("b")"});
  expect_language(schema(R"({"type": "integer", "nullable": true, "minimum": 1})"), {"1", "null"}, {"0", "\"1\""});
  // enum / const values are kept only where the other keywords allow them.
  expect_language(schema(R"({"type": "string", "enum": ["ab", "b", 3], "pattern": "^a"})"), {R"("ab")"},
                  {R"("b")", "3"});
  expect_language(schema(R"({"enum": [1, "x", null], "anyOf": [{"type": "integer"}, {"type": "null"}]})"),
                  {"1", "null"}, {R"("x")"});
  expect_refused(R"({"const": 5, "minimum": 6})", "const", "no value");
  expect_refused(R"({"allOf": [{"format": "date"}, {"format": "email"}]})", "allOf", "format");
}

TEST(JsonSchemaComposition, RecordsWithPropertyNames) {
  // z.record(z.string(), z.number())
  const Grammar record =
      schema(R"({"type": "object", "propertyNames": {"type": "string"}, "additionalProperties": {"type": "number"}})");
  expect_language(record, {"{}", R"({"a":1,"b": 2.5})"}, {R"({"a":"x"})", R"({1:2})"});
  expect_language(schema(R"({"type": "object", "propertyNames": {"pattern": "^[a-z]+$"},
                             "additionalProperties": {"type": "boolean"}, "maxProperties": 2})"),
                  {R"({"ab":true})", R"({"a":true,"b":false})"}, {R"({"A":true})", R"({"a":true,"b":true,"c":true})"});
  // z.record(z.enum(["a", "b"]), z.string()): exhaustive, so both keys are required (and not in properties).
  expect_language(schema(R"({"type": "object", "propertyNames": {"type": "string", "enum": ["a", "b"]},
                             "additionalProperties": {"type": "string"}, "required": ["a", "b"]})"),
                  {R"({"a":"x","b":"y"})"}, {R"({"a":"x"})", R"({"b":"y","a":"x"})"});
  // Pydantic dict[str, int] with min_length.
  expect_language(schema(R"({"type": "object", "additionalProperties": {"type": "integer"}, "minProperties": 1})"),
                  {R"({"k":1})"}, {"{}"});
  expect_language(schema(R"({"type": "object", "properties": {"id": {"type": "string"}}, "required": ["id"],
                             "propertyNames": {"maxLength": 3}})"),
                  {R"({"id":"x"})"}, {});
  expect_refused(R"({"type": "object", "propertyNames": {"type": "integer"}})", "propertyNames", "strings");
  expect_refused(R"({"type": "object", "properties": {"long": {}}, "required": ["long"],
                     "propertyNames": {"maxLength": 3}})",
                 "required", "long");
}

TEST(JsonSchemaComposition, Tuples) {
  // zod 4 z.tuple([z.string(), z.number()]) (draft 2020-12)
  expect_language(schema(R"({"type": "array", "prefixItems": [{"type": "string"}, {"type": "number"}], "items": false,
                             "minItems": 2, "maxItems": 2})"),
                  {R"(["a",1])", R"(["a", 1.5])"}, {R"(["a"])", R"(["a",1,2])", R"([1,"a"])", "[]"});
  // A rest element and an optional last item.
  expect_language(schema(R"({"type": "array", "prefixItems": [{"type": "string"}, {"type": "boolean"}],
                             "items": {"type": "integer"}, "minItems": 1})"),
                  {R"(["a"])", R"(["a",true])", R"(["a",true,1,2])"}, {"[]", R"(["a",1])", R"(["a",true,"x"])"});
  // Draft 7 (zod-to-json-schema, the AI SDK): items as an array, additionalItems.
  expect_language(schema(R"({"type": "array", "minItems": 2, "maxItems": 2,
                             "items": [{"type": "string"}, {"type": "number"}]})"),
                  {R"(["a",1])"}, {R"(["a"])", R"(["a",1,2])"});
  expect_language(schema(R"({"type": "array", "items": [{"type": "string"}], "additionalItems": false})"),
                  {"[]", R"(["a"])"}, {R"(["a","b"])"});
  expect_language(schema(R"({"type": "array", "items": [{"type": "string"}], "additionalItems": {"type": "null"},
                             "maxItems": 3})"),
                  {R"(["a",null,null])"}, {R"(["a",null,null,null])", R"(["a","b"])"});
  expect_refused(R"({"type": "array", "prefixItems": [{}], "items": false, "minItems": 2})", "minItems");
}

TEST(JsonSchemaWholeShapes, Zod4ToJsonSchema) {
  const std::string user = std::string(R"({"$schema": "https://json-schema.org/draft/2020-12/schema",
    "type": "object", "properties": {
      "id": {"type": "string", "format": "uuid", "pattern": )") +
                           test::kZodUuidPattern + R"(},
      "email": {"type": "string", "format": "email", "pattern": )" +
                           test::kZodEmailPattern + R"(},
      "age": {"type": "integer", "minimum": -9007199254740991, "maximum": 9007199254740991},
      "score": {"type": "number", "exclusiveMinimum": 0},
      "count": {"type": "integer", "exclusiveMinimum": 0, "maximum": 9007199254740991},
      "role": {"type": "string", "enum": ["admin", "user"]},
      "shape": )" + kShape +
                           R"(,
      "tags": {"type": "object", "propertyNames": {"type": "string"}, "additionalProperties": {"type": "string"}},
      "point": {"type": "array", "prefixItems": [{"type": "number"}, {"type": "number"}], "items": false,
                "minItems": 2, "maxItems": 2},
      "nickname": {"anyOf": [{"type": "string"}, {"type": "null"}]},
      "bio": {"type": "string", "maxLength": 20}},
    "required": ["id", "email", "age", "score", "count", "role", "shape", "tags", "point", "nickname"],
    "additionalProperties": false})";
  const std::string head = R"({"id":"123e4567-e89b-42d3-a456-426614174000","email":"jane@example.com","age":-3,)";
  const std::string tail = R"("role":"user","shape":{"kind":"square","side":2},"tags":{"a":"b"},"point":[1,2],)";
  expect_language(schema(user),
                  {head + R"("score":0.5,"count":1,)" + tail + R"("nickname":null})",
                   head + R"("score":12,"count":9007199254740991,)" + tail + R"("nickname":"J","bio":"hi"})"},
                  {head + R"("score":0,"count":1,)" + tail + R"("nickname":null})",
                   head + R"("score":1,"count":0,)" + tail + R"("nickname":null})",
                   head + R"("score":1,"count":1,)" + tail + R"("nickname":null,"extra":1})"});
}

TEST(JsonSchemaWholeShapes, PydanticV2ModelJsonSchema) {
  const Grammar g = schema(R"({"$defs": {
      "Cat": {"properties": {"pet_type": {"const": "cat", "title": "Pet Type", "type": "string"},
                             "meows": {"title": "Meows", "type": "integer"}},
              "required": ["pet_type", "meows"], "title": "Cat", "type": "object"},
      "Dog": {"properties": {"pet_type": {"const": "dog", "title": "Pet Type", "type": "string"},
                             "barks": {"title": "Barks", "type": "number"}},
              "required": ["pet_type", "barks"], "title": "Dog", "type": "object"},
      "Color": {"enum": ["red", "green"], "title": "Color", "type": "string"}},
    "properties": {
      "pet": {"discriminator": {"mapping": {"cat": "#/$defs/Cat", "dog": "#/$defs/Dog"}, "propertyName": "pet_type"},
              "oneOf": [{"$ref": "#/$defs/Cat"}, {"$ref": "#/$defs/Dog"}], "title": "Pet"},
      "n": {"exclusiveMinimum": 0, "title": "N", "type": "integer"},
      "ratio": {"maximum": 1, "minimum": 0, "title": "Ratio", "type": "number"},
      "nickname": {"anyOf": [{"type": "string"}, {"type": "null"}], "default": null, "title": "Nickname"},
      "when": {"format": "date-time", "title": "When", "type": "string"},
      "color": {"$ref": "#/$defs/Color", "default": "red"},
      "point": {"maxItems": 2, "minItems": 2, "prefixItems": [{"type": "integer"}, {"type": "integer"}],
                "title": "Point", "type": "array"},
      "scores": {"additionalProperties": {"type": "number"}, "title": "Scores", "type": "object"},
      "site": {"format": "uri", "maxLength": 2083, "minLength": 1, "title": "Site", "type": "string"}},
    "required": ["pet", "n", "ratio", "when", "point", "scores"], "title": "Model", "type": "object"})");
  const std::string pet = R"({"pet":{"pet_type":"cat","meows":3},"n":2,"ratio":0.25,)";
  const std::string when = R"("when":"2024-01-02T03:04:05Z",)";
  expect_language(
      g,
      {pet + when + R"("point":[1,2],"scores":{}})", pet + R"("nickname":null,)" + when +
                                                         R"("color":"green","point":[1,-2],"scores":{"a":1.5},)" +
                                                         R"("site":"https://x.io"})"},
      {pet + when + R"("point":[1],"scores":{}})", pet + when + R"("color":"blue","point":[1,2],"scores":{}})",
       pet + R"("when":"2024-01-02",)" + R"("point":[1,2],"scores":{}})",
       R"({"pet":{"pet_type":"cat","barks":3},"n":2,"ratio":0.25,)" + when + R"("point":[1,2],"scores":{}})",
       R"({"pet":{"pet_type":"cat","meows":3},"n":0,"ratio":0.25,)" + when + R"("point":[1,2],"scores":{}})",
       R"({"pet":{"pet_type":"cat","meows":3},"n":2,"ratio":1.5,)" + when + R"("point":[1,2],"scores":{}})"});
}

TEST(JsonSchemaWholeShapes, AiSdkDraft7) {
  // generateObject with a zod 3 schema through zod-to-json-schema.
  const Grammar g = schema(R"({"type": "object", "properties": {"recipe": {"type": "object", "properties": {
      "name": {"type": "string"},
      "ingredients": {"type": "array", "items": {"type": "object", "properties": {"name": {"type": "string"},
          "amount": {"type": "string"}}, "required": ["name", "amount"], "additionalProperties": false}},
      "steps": {"type": "array", "items": {"type": "string"}},
      "servings": {"type": "integer", "exclusiveMinimum": 0},
      "pair": {"type": "array", "minItems": 2, "maxItems": 2, "items": [{"type": "string"}, {"type": "number"}]},
      "meta": {"type": "object", "additionalProperties": {"type": ["string", "null"]}}},
    "required": ["name", "ingredients", "steps"], "additionalProperties": false}},
    "required": ["recipe"], "additionalProperties": false, "$schema": "http://json-schema.org/draft-07/schema#"})");
  const std::string base = R"({"recipe":{"name":"Soup","ingredients":[{"name":"salt","amount":"1g"}],"steps":["boil"])";
  expect_language(g, {base + "}}", base + R"(,"servings":2,"pair":["a",1],"meta":{"k":null,"j":"v"}}})"},
                  {base + R"(,"servings":0}})", base + R"(,"pair":["a"]}})", base + R"(,"meta":{"k":1}}})"});
}

}  // namespace
}  // namespace cai::grammar
