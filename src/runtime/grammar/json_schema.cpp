// JSON Schema (a subset, see grammar.h) → Grammar. Every refusal names the keyword that caused it.
#include <algorithm>
#include <cmath>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "runtime/grammar/byte_dfa.h"
#include "runtime/grammar/grammar_node.h"
#include "runtime/grammar/json_grammar.h"

namespace cai::grammar {

namespace {

using nlohmann::ordered_json;

const std::set<std::string, std::less<>> kConstraining = {"type",    "properties", "required",  "additionalProperties",
                                                          "items",   "minItems",   "maxItems",  "enum",
                                                          "const",   "anyOf",      "minLength", "maxLength",
                                                          "minimum", "maximum",    "$ref"};
const std::set<std::string, std::less<>> kIgnored = {"title", "description", "default", "examples", "$schema",
                                                     "$id",   "$comment",    "strict",  "$defs",    "definitions"};

class SchemaCompiler {
 public:
  explicit SchemaCompiler(const ordered_json& root) : root_(root) {}

  Result<Grammar> compile(const ordered_json& s, int depth) {
    if (depth > kMaxSchemaDepth) return invalid_argument("schema: nested deeper than {} levels", kMaxSchemaDepth);
    if (s.is_boolean()) {
      if (s.get<bool>()) return Grammar::json_value();
      return invalid_argument("false: a schema that allows nothing cannot be generated");
    }
    if (!s.is_object()) return invalid_argument("schema: a schema must be an object or a boolean");
    for (const auto& [key, value] : s.items())
      if (!kConstraining.contains(key) && !kIgnored.contains(key))
        return invalid_argument("{}: this JSON Schema keyword is not supported", key);
    if (s.contains("$ref")) return compile_ref(s, depth);
    if (const ordered_json* c = find(s, "const")) return Grammar::literal(c->dump());
    if (const ordered_json* e = find(s, "enum")) {
      if (!e->is_array() || e->empty()) return invalid_argument("enum: must be a non-empty array");
      std::vector<Grammar> options;
      for (const ordered_json& v : *e) options.push_back(Grammar::literal(v.dump()));
      return Grammar::alternatives(std::move(options));
    }
    if (const ordered_json* any = find(s, "anyOf")) {
      if (!any->is_array() || any->empty()) return invalid_argument("anyOf: must be a non-empty array");
      for (const auto& [key, value] : s.items())
        if (key != "anyOf" && kConstraining.contains(key))
          return invalid_argument("anyOf: combined with the sibling keyword '{}' is not supported", key);
      std::vector<Grammar> options;
      for (const ordered_json& sub : *any) {
        CAI_ASSIGN_OR_RETURN(Grammar g, compile(sub, depth + 1));
        options.push_back(std::move(g));
      }
      return Grammar::alternatives(std::move(options));
    }
    const ordered_json* type = find(s, "type");
    if (!type) return compile_type(s, inferred_type(s), depth);
    if (type->is_string()) return compile_type(s, type->get<std::string>(), depth);
    if (!type->is_array() || type->empty()) return invalid_argument("type: must be a type name or a list of them");
    std::vector<Grammar> options;
    for (const ordered_json& t : *type) {
      if (!t.is_string()) return invalid_argument("type: must be a type name or a list of them");
      CAI_ASSIGN_OR_RETURN(Grammar g, compile_type(s, t.get<std::string>(), depth));
      options.push_back(std::move(g));
    }
    return Grammar::alternatives(std::move(options));
  }

 private:
  static const ordered_json* find(const ordered_json& s, std::string_view key) {
    auto it = s.find(key);
    return it == s.end() ? nullptr : &*it;
  }

  // The type a schema without "type" constrains, from its keywords ("" = any value).
  static std::string inferred_type(const ordered_json& s) {
    if (s.contains("properties") || s.contains("required") || s.contains("additionalProperties")) return "object";
    if (s.contains("items") || s.contains("minItems") || s.contains("maxItems")) return "array";
    if (s.contains("minLength") || s.contains("maxLength")) return "string";
    if (s.contains("minimum") || s.contains("maximum")) return "number";
    return "";
  }

  Result<Grammar> compile_ref(const ordered_json& s, int depth) {
    for (const auto& [key, value] : s.items())
      if (key != "$ref" && kConstraining.contains(key))
        return invalid_argument("$ref: combined with the sibling keyword '{}' is not supported", key);
    const ordered_json& ref = s["$ref"];
    if (!ref.is_string()) return invalid_argument("$ref: must be a string");
    const std::string target = ref.get<std::string>();
    if (target.empty() || target[0] != '#')
      return invalid_argument("$ref: only references inside the schema (\"#...\") are supported, got '{}'", target);
    if (std::find(refs_.begin(), refs_.end(), target) != refs_.end())
      return invalid_argument("$ref: recursive reference '{}' is not supported", target);
    const ordered_json* resolved = nullptr;
    try {
      const ordered_json::json_pointer pointer(target.substr(1));
      if (root_.contains(pointer)) resolved = &root_.at(pointer);
    } catch (const ordered_json::exception&) {
      return invalid_argument("$ref: '{}' is not a valid JSON pointer", target);
    }
    if (!resolved) return invalid_argument("$ref: '{}' does not exist in the schema", target);
    if (auto it = expanded_.find(target); it != expanded_.end()) return it->second;
    refs_.push_back(target);
    Result<Grammar> g = compile(*resolved, depth + 1);
    refs_.pop_back();
    if (g.ok()) expanded_.emplace(target, g.value());
    return g;
  }

  static Result<std::optional<int64_t>> count(const ordered_json& s, std::string_view key, int64_t most) {
    const ordered_json* v = find(s, key);
    if (!v) return std::optional<int64_t>();
    if (!v->is_number_integer() && !(v->is_number_float() && std::floor(v->get<double>()) == v->get<double>()))
      return invalid_argument("{}: must be a non-negative integer", key);
    const double d = v->get<double>();
    if (d < 0) return invalid_argument("{}: must be a non-negative integer", key);
    if (d > static_cast<double>(most)) return invalid_argument("{}: at most {} is supported, got {}", key, most, d);
    return std::optional<int64_t>(static_cast<int64_t>(d));
  }

  Result<Grammar> compile_type(const ordered_json& s, const std::string& type, int depth) {
    if (type.empty()) return Grammar::json_value();
    if (type == "null") return Grammar::literal("null");
    if (type == "boolean") return Grammar::alternatives({Grammar::literal("true"), Grammar::literal("false")});
    if (type == "string") {
      CAI_ASSIGN_OR_RETURN(std::optional<int64_t> min, count(s, "minLength", kMaxStringLengthBound));
      CAI_ASSIGN_OR_RETURN(std::optional<int64_t> max, count(s, "maxLength", kMaxStringLengthBound));
      if (min && max && *min > *max) return invalid_argument("minLength: greater than maxLength");
      return json_string(static_cast<int>(min.value_or(0)), max ? static_cast<int>(*max) : -1);
    }
    if (type == "integer" || type == "number") return compile_number(s, type == "integer");
    if (type == "array") return compile_array(s, depth);
    if (type == "object") return compile_object(s, depth);
    return invalid_argument("type: unknown type '{}'", type);
  }

  // Numbers with bounds are produced as integers in the range (a subset of the valid values).
  static Result<Grammar> compile_number(const ordered_json& s, bool integer) {
    const ordered_json* min = find(s, "minimum");
    const ordered_json* max = find(s, "maximum");
    if (!min && !max) return integer ? json_integer() : json_number();
    std::optional<int64_t> lo, hi;
    for (auto [v, key] : {std::pair{min, "minimum"}, std::pair{max, "maximum"}}) {
      if (!v) continue;
      if (!v->is_number()) return invalid_argument("{}: must be a number", key);
      const double d = v->get<double>();
      if (!(std::fabs(d) <= static_cast<double>(kMaxIntegerBound)))
        return invalid_argument("{}: bounds beyond ±{} are not supported", key, kMaxIntegerBound);
      (v == min ? lo : hi) = static_cast<int64_t>(v == min ? std::ceil(d) : std::floor(d));
    }
    if (lo && hi && *lo > *hi) return invalid_argument("minimum: no integer lies between minimum and maximum");
    return json_integer_range(lo, hi);
  }

  Result<Grammar> compile_array(const ordered_json& s, int depth) {
    CAI_ASSIGN_OR_RETURN(std::optional<int64_t> min, count(s, "minItems", kMaxItemsBound));
    CAI_ASSIGN_OR_RETURN(std::optional<int64_t> max, count(s, "maxItems", kMaxItemsBound));
    if (min && max && *min > *max) return invalid_argument("minItems: greater than maxItems");
    Grammar item = Grammar::json_value();
    if (const ordered_json* items = find(s, "items")) {
      if (items->is_array()) return invalid_argument("items: a list of schemas (tuple validation) is not supported");
      CAI_ASSIGN_OR_RETURN(item, compile(*items, depth + 1));
    }
    return json_array(item, static_cast<int>(min.value_or(0)), max ? static_cast<int>(*max) : -1);
  }

  Result<Grammar> compile_object(const ordered_json& s, int depth) {
    const ordered_json* props = find(s, "properties");
    if (props && !props->is_object()) return invalid_argument("properties: must be an object");
    std::set<std::string> required;
    if (const ordered_json* req = find(s, "required")) {
      if (!req->is_array()) return invalid_argument("required: must be an array of property names");
      for (const ordered_json& r : *req) {
        if (!r.is_string()) return invalid_argument("required: must be an array of property names");
        if (!props || !props->contains(r.get<std::string>()))
          return invalid_argument("required: '{}' is not in properties", r.get<std::string>());
        required.insert(r.get<std::string>());
      }
    }
    if (const ordered_json* extra = find(s, "additionalProperties");
        extra && !extra->is_boolean() && !extra->is_object())
      return invalid_argument("additionalProperties: must be a boolean or a schema");
    if (!props || props->empty()) {
      const ordered_json* extra = find(s, "additionalProperties");
      if (extra && extra->is_boolean() && !extra->get<bool>()) return Grammar::literal("{}");
      return any_json_object(Grammar::json_value());
    }
    // Members in schema order; optional ones may be left out. `kv[i]` = "key": value.
    std::vector<Grammar> kv;
    std::vector<bool> is_required;
    for (const auto& [key, sub] : props->items()) {
      CAI_ASSIGN_OR_RETURN(Grammar value, compile(sub, depth + 1));
      kv.push_back(Grammar::sequence({Grammar::literal(ordered_json(key).dump()), json_separator(':'), value}));
      is_required.push_back(required.contains(key));
    }
    // The first member present is i (every one before it optional); each later one follows a comma.
    const Grammar comma = json_separator(',');
    std::vector<Grammar> bodies;
    for (size_t i = 0; i < kv.size(); ++i) {
      std::vector<Grammar> body{kv[i]};
      for (size_t k = i + 1; k < kv.size(); ++k) {
        Grammar next = Grammar::sequence({comma, kv[k]});
        body.push_back(is_required[k] ? next : Grammar::optional(next));
      }
      bodies.push_back(Grammar::sequence(std::move(body)));
      if (is_required[i]) break;
    }
    if (required.empty()) bodies.push_back(Grammar::literal(""));
    return Grammar::sequence({Grammar::literal("{"), Grammar::alternatives(std::move(bodies)), Grammar::literal("}")});
  }

  const ordered_json& root_;
  std::vector<std::string> refs_;            // $refs being expanded (a repeat is recursion)
  std::map<std::string, Grammar> expanded_;  // $refs compiled so far (shared, so repeated use stays linear)
};

}  // namespace

Result<Grammar> compile_json_schema(const ordered_json& schema) {
  SchemaCompiler compiler(schema);
  CAI_ASSIGN_OR_RETURN(Grammar g, compiler.compile(schema, 0));
  if (!compile_program(g))
    return invalid_argument("schema: too large once expanded (more than {} automaton states)", kMaxProgramNodes);
  return g;
}

}  // namespace cai::grammar
