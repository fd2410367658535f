// JSON Schema (the subset docs/structured-output.md lists) → Grammar: the keyword check, dispatch by type, $ref,
// nullable, const and enum, anyOf/oneOf. Every refusal names the keyword that caused it.
#include <algorithm>
#include <cmath>
#include <set>

#include "runtime/grammar/byte_dfa.h"
#include "runtime/grammar/json_grammar.h"
#include "runtime/grammar/json_schema_compiler.h"

namespace cai::grammar {

namespace {
namespace schema_dispatch {

using KeywordSet = std::set<std::string, std::less<>>;
// The keywords the compiler acts on, for any value and by the type they constrain.
const KeywordSet kForAnyValue = {"type", "enum", "const", "anyOf", "oneOf", "allOf", "$ref", "nullable"};
const KeywordSet kForObjects = {"properties",    "required",      "additionalProperties",
                                "propertyNames", "minProperties", "maxProperties"};
const KeywordSet kForArrays = {"items", "prefixItems", "additionalItems", "minItems", "maxItems"};
const KeywordSet kForStrings = {"minLength", "maxLength", "pattern", "format"};
const KeywordSet kForNumbers = {"minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum"};
// Keywords that only describe (OpenAPI's "x-..." extensions too).
const KeywordSet kAnnotations = {
    "title",         "description", "default",   "examples",   "example",         "$schema",
    "$id",           "$anchor",     "$comment",  "strict",     "$defs",           "definitions",
    "discriminator", "readOnly",    "writeOnly", "deprecated", "contentEncoding", "contentMediaType"};

bool is_annotation(std::string_view key) { return kAnnotations.contains(key) || key.starts_with("x-"); }

// Whether `v` is a value of the JSON Schema type `type`.
bool has_type(const Json& v, std::string_view type) {
  if (type == "null") return v.is_null();
  if (type == "boolean") return v.is_boolean();
  if (type == "string") return v.is_string();
  if (type == "object") return v.is_object();
  if (type == "array") return v.is_array();
  if (type == "number") return v.is_number();
  if (type == "integer")
    return v.is_number_integer() || (v.is_number_float() && std::floor(v.get<double>()) == v.get<double>());
  return false;
}

// The type a schema without "type" constrains, from its keywords ("" = any value).
std::string inferred_type(const Json& s) {
  for (const auto& [set, type] : {std::pair{&kForObjects, "object"}, std::pair{&kForArrays, "array"},
                                  std::pair{&kForStrings, "string"}, std::pair{&kForNumbers, "number"}})
    for (const auto& [key, value] : s.items())
      if (set->contains(key)) return type;
  return "";
}

}  // namespace schema_dispatch
}  // namespace

const Json* schema_member(const Json& s, std::string_view key) {
  if (!s.is_object()) return nullptr;
  auto it = s.find(key);
  return it == s.end() ? nullptr : &*it;
}

bool is_constraining_keyword(std::string_view key) {
  using namespace schema_dispatch;
  for (const KeywordSet* set : {&kForAnyValue, &kForObjects, &kForArrays, &kForStrings, &kForNumbers})
    if (set->contains(key)) return true;
  return false;
}

Result<std::optional<int64_t>> schema_count(const Json& s, std::string_view key, int64_t most) {
  const Json* v = schema_member(s, key);
  if (!v) return std::optional<int64_t>();
  if (!v->is_number_integer() && !(v->is_number_float() && std::floor(v->get<double>()) == v->get<double>()))
    return invalid_argument("{}: must be a non-negative integer", key);
  const double d = v->get<double>();
  if (d < 0) return invalid_argument("{}: must be a non-negative integer", key);
  if (d > static_cast<double>(most)) return invalid_argument("{}: at most {} is supported, got {}", key, most, d);
  return std::optional<int64_t>(static_cast<int64_t>(d));
}

Result<std::vector<std::string>> schema_types(const Json& s) {
  std::vector<std::string> types;
  const Json* type = schema_member(s, "type");
  if (!type) return types;
  if (type->is_string()) return std::vector<std::string>{type->get<std::string>()};
  if (!type->is_array() || type->empty()) return invalid_argument("type: must be a type name or a list of them");
  for (const Json& t : *type) {
    if (!t.is_string()) return invalid_argument("type: must be a type name or a list of them");
    types.push_back(t.get<std::string>());
  }
  return types;
}

Result<Grammar> SchemaCompiler::compile(const Json& s, int depth) {
  if (depth > kMaxSchemaDepth) return invalid_argument("schema: nested deeper than {} levels", kMaxSchemaDepth);
  if (s.is_boolean()) {
    if (s.get<bool>()) return Grammar::json_value();
    return invalid_argument("false: a schema that allows nothing cannot be generated");
  }
  if (!s.is_object()) return invalid_argument("schema: a schema must be an object or a boolean");
  bool ref_siblings = false;  // a $ref next to constraining keywords: merged with them
  for (const auto& [key, value] : s.items()) {
    if (!is_constraining_keyword(key) && !schema_dispatch::is_annotation(key))
      return invalid_argument("{}: this JSON Schema keyword is not supported", key);
    ref_siblings |= key != "$ref" && is_constraining_keyword(key);
  }
  if (s.contains("allOf") || (s.contains("$ref") && ref_siblings)) return compile_merged(s, depth);
  if (s.contains("$ref")) return compile_ref(s, depth);
  if (const Json* nullable = schema_member(s, "nullable")) {  // OpenAPI 3.0: null is allowed too
    if (!nullable->is_boolean()) return invalid_argument("nullable: must be a boolean");
    Json rest = s;
    rest.erase("nullable");
    CAI_ASSIGN_OR_RETURN(Grammar g, compile(rest, depth));
    return nullable->get<bool>() ? Grammar::alternatives({g, Grammar::literal("null")}) : g;
  }
  CAI_ASSIGN_OR_RETURN(std::vector<std::string> types, schema_types(s));
  if (s.contains("const") || s.contains("enum")) return compile_values(s, types, depth);
  const bool any_of = s.contains("anyOf"), one_of = s.contains("oneOf");
  if (any_of && one_of) return invalid_argument("oneOf: combined with anyOf in one schema is not supported");
  if (any_of || one_of) return compile_alternatives(s, any_of ? "anyOf" : "oneOf", depth);
  if (types.empty()) return compile_type(s, schema_dispatch::inferred_type(s), depth);
  std::vector<Grammar> options;
  for (const std::string& t : types) {
    CAI_ASSIGN_OR_RETURN(Grammar g, compile_type(s, t, depth));
    options.push_back(std::move(g));
  }
  return Grammar::alternatives(std::move(options));
}

// const / enum: the listed values of the schema's type that its other keywords (anyOf, pattern, bounds, ...) allow
// too, checked against their grammar.
Result<Grammar> SchemaCompiler::compile_values(const Json& s, const std::vector<std::string>& types, int depth) {
  const std::string keyword = s.contains("const") ? "const" : "enum";
  const Json& listed = s[keyword];
  if (keyword == "enum" && (!listed.is_array() || listed.empty()))
    return invalid_argument("enum: must be a non-empty array");
  std::vector<Json> values;
  for (const Json& v : keyword == "const" ? Json::array({listed}) : listed)
    if (types.empty() ||
        std::any_of(types.begin(), types.end(), [&](const std::string& t) { return schema_dispatch::has_type(v, t); }))
      values.push_back(v);
  Json others = s;
  others.erase("const");
  others.erase("enum");
  bool constrained = false;
  for (const auto& [key, value] : others.items()) constrained |= key != "type" && is_constraining_keyword(key);
  if (constrained && !values.empty()) {
    CAI_ASSIGN_OR_RETURN(Grammar g, compile(others, depth + 1));
    std::optional<Program> program = compile_program(g);
    if (!program)
      return invalid_argument("schema: too large once expanded (more than {} automaton states)", kMaxProgramNodes);
    ByteDfa dfa(std::move(*program));
    std::erase_if(values, [&](const Json& v) {
      int32_t state = dfa.start();
      for (char c : v.dump())
        if ((state = dfa.step(state, static_cast<unsigned char>(c))) == ByteDfa::kDead) return true;
      return !dfa.accepting(state);
    });
  }
  if (values.empty()) return invalid_argument("{}: no value is valid against the schema's other keywords", keyword);
  std::vector<Grammar> options;
  for (const Json& v : values) options.push_back(Grammar::literal(v.dump()));
  return Grammar::alternatives(std::move(options));
}

Result<const Json*> SchemaCompiler::resolve(const Json& ref) const {
  if (!ref.is_string()) return invalid_argument("$ref: must be a string");
  const std::string target = ref.get<std::string>();
  if (target.empty() || target[0] != '#')
    return invalid_argument("$ref: only references inside the schema (\"#...\") are supported, got '{}'", target);
  if (std::find(refs_.begin(), refs_.end(), target) != refs_.end())
    return invalid_argument("$ref: recursive reference '{}' is not supported", target);
  try {
    const Json::json_pointer pointer(target.substr(1));
    if (root_.contains(pointer)) return &root_.at(pointer);
  } catch (const Json::exception&) {
    return invalid_argument("$ref: '{}' is not a valid JSON pointer", target);
  }
  return invalid_argument("$ref: '{}' does not exist in the schema", target);
}

Result<Grammar> SchemaCompiler::compile_ref(const Json& s, int depth) {
  CAI_ASSIGN_OR_RETURN(const Json* resolved, resolve(s["$ref"]));
  const std::string target = s["$ref"].get<std::string>();
  if (auto it = expanded_.find(target); it != expanded_.end()) return it->second;
  refs_.push_back(target);
  Result<Grammar> g = compile(*resolved, depth + 1);
  refs_.pop_back();
  if (g.ok()) expanded_.emplace(target, g.value());
  return g;
}

// oneOf is generated as anyOf: the alternatives a generator can tell apart (discriminated unions) are disjoint.
Result<Grammar> SchemaCompiler::compile_alternatives(const Json& s, const std::string& keyword, int depth) {
  const Json& list = s[keyword];
  if (!list.is_array() || list.empty()) return invalid_argument("{}: must be a non-empty array", keyword);
  // Constraining siblings (e.g. "type": "object" next to alternatives that are objects) apply to every alternative.
  Json siblings = Json::object();
  for (const auto& [key, value] : s.items())
    if (key != keyword && is_constraining_keyword(key)) siblings[key] = value;
  std::vector<Grammar> options;
  for (const Json& sub : list) {
    if (sub.is_boolean() && !sub.get<bool>()) continue;  // allows nothing
    Json alternative = sub;
    if (!siblings.empty()) {
      CAI_ASSIGN_OR_RETURN(alternative, merge(siblings, sub, keyword, depth + 1));
      if (alternative.is_boolean() && !alternative.get<bool>()) continue;
    }
    CAI_ASSIGN_OR_RETURN(Grammar g, compile(alternative, depth + 1));
    options.push_back(std::move(g));
  }
  if (options.empty())
    return invalid_argument("{}: no alternative allows a value (with the sibling keywords applied)", keyword);
  return Grammar::alternatives(std::move(options));
}

Result<Grammar> SchemaCompiler::compile_type(const Json& s, const std::string& type, int depth) {
  if (type.empty()) return Grammar::json_value();
  if (type == "null") return Grammar::literal("null");
  if (type == "boolean") return Grammar::alternatives({Grammar::literal("true"), Grammar::literal("false")});
  if (type == "string") return compile_string(s);
  if (type == "integer" || type == "number") return compile_number(s, type == "integer");
  if (type == "array") return compile_array(s, depth);
  if (type == "object") return compile_object(s, depth);
  return invalid_argument("type: unknown type '{}'", type);
}

Result<Grammar> compile_json_schema(const Json& schema) {
  SchemaCompiler compiler(schema);
  CAI_ASSIGN_OR_RETURN(Grammar g, compiler.compile(schema, 0));
  if (!compile_program(g))
    return invalid_argument("schema: too large once expanded (more than {} automaton states)", kMaxProgramNodes);
  return g;
}

}  // namespace cai::grammar
