// Objects (properties, required, additionalProperties, propertyNames, minProperties/maxProperties) and arrays
// (items, prefixItems and draft 7's items array as tuples, additionalItems, minItems/maxItems) of the JSON-Schema
// compiler.
#include <algorithm>
#include <set>

#include "runtime/grammar/grammar_node.h"
#include "runtime/grammar/json_grammar.h"
#include "runtime/grammar/json_schema_compiler.h"

namespace cai::grammar {

namespace {
namespace schema_containers {

bool is_false(const Json& s) { return s.is_boolean() && !s.get<bool>(); }

}  // namespace schema_containers
}  // namespace

Result<Grammar> SchemaCompiler::compile_object(const Json& s, int depth) {
  const Json* props = schema_member(s, "properties");
  if (props && !props->is_object()) return invalid_argument("properties: must be an object");
  const Json* extra = schema_member(s, "additionalProperties");
  if (extra && !extra->is_boolean() && !extra->is_object())
    return invalid_argument("additionalProperties: must be a boolean or a schema");
  const Json extra_schema = extra ? *extra : Json(true);
  CAI_ASSIGN_OR_RETURN(std::optional<int64_t> min, schema_count(s, "minProperties", kMaxItemsBound));
  CAI_ASSIGN_OR_RETURN(std::optional<int64_t> max, schema_count(s, "maxProperties", kMaxItemsBound));
  if (min && max && *min > *max) return invalid_argument("minProperties: greater than maxProperties");
  std::optional<Grammar> names;
  if (const Json* pn = schema_member(s, "propertyNames")) {
    CAI_ASSIGN_OR_RETURN(names, compile_property_names(*pn, depth + 1));
  }
  // The members that may be written, in schema order: listed properties, then required names properties does not
  // list (zod's records with enum keys), whose values follow additionalProperties.
  std::vector<std::pair<std::string, const Json*>> listed;
  if (props)
    for (const auto& [key, sub] : props->items()) listed.emplace_back(key, &sub);
  std::set<std::string> required;
  if (const Json* req = schema_member(s, "required")) {
    if (!req->is_array()) return invalid_argument("required: must be an array of property names");
    for (const Json& r : *req) {
      if (!r.is_string()) return invalid_argument("required: must be an array of property names");
      const std::string name = r.get<std::string>();
      if (!required.insert(name).second || (props && props->contains(name))) continue;
      if (schema_containers::is_false(extra_schema))
        return invalid_argument("required: '{}' is not in properties and additionalProperties is false", name);
      listed.emplace_back(name, &extra_schema);
    }
  }
  if (listed.empty()) {  // a map: any names (as propertyNames allows), values as additionalProperties says
    if (schema_containers::is_false(extra_schema)) {
      if (min.value_or(0) > 0) return invalid_argument("minProperties: additionalProperties false allows none");
      return Grammar::literal("{}");
    }
    CAI_ASSIGN_OR_RETURN(Grammar value, compile(extra_schema, depth + 1));
    return json_object_of(names ? *names : json_string(), value, static_cast<int>(min.value_or(0)),
                          max ? static_cast<int>(*max) : -1);
  }
  // `kv[i]` = "key": value for the members that may appear.
  std::vector<Grammar> kv;
  std::vector<bool> is_required;
  for (const auto& [key, sub] : listed) {
    const bool needed = required.contains(key);
    const std::string quoted = Json(key).dump();
    if (schema_containers::is_false(*sub) || (names && !names->matches(quoted))) {  // it may never appear
      if (needed) return invalid_argument("required: '{}' can never be valid (its schema or propertyNames)", key);
      continue;
    }
    CAI_ASSIGN_OR_RETURN(Grammar value, compile(*sub, depth + 1));
    kv.push_back(Grammar::sequence({Grammar::literal(quoted), json_separator(':'), value}));
    is_required.push_back(needed);
  }
  const auto n_required = static_cast<int64_t>(std::count(is_required.begin(), is_required.end(), true));
  if (min && *min > n_required)
    return invalid_argument("minProperties: more than the required properties ({}) is not supported", n_required);
  if (max && *max < static_cast<int64_t>(kv.size()))
    return invalid_argument("maxProperties: fewer than the listed properties ({}) is not supported", kv.size());
  if (kv.empty()) return Grammar::literal("{}");
  // Members in schema order; optional ones may be left out. The first member present is i (every one before it
  // optional); each later one follows a comma.
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
  if (n_required == 0) bodies.push_back(Grammar::literal(""));
  return Grammar::sequence({Grammar::literal("{"), Grammar::alternatives(std::move(bodies)), Grammar::literal("}")});
}

Result<Grammar> SchemaCompiler::compile_property_names(const Json& names, int depth) {
  if (names.is_boolean()) {
    if (names.get<bool>()) return json_string();
    return invalid_argument("propertyNames: false (no property allowed) is not supported");
  }
  if (!names.is_object()) return invalid_argument("propertyNames: must be a schema");
  // Names are strings: the schema is compiled as a string schema (its other types, enum values and alternatives
  // drop out).
  CAI_ASSIGN_OR_RETURN(std::vector<std::string> types, schema_types(names));
  if (!types.empty() && std::find(types.begin(), types.end(), "string") == types.end())
    return invalid_argument("propertyNames: must describe strings (\"type\": \"string\")");
  Json as_string = names;
  as_string["type"] = "string";
  return compile(as_string, depth);
}

Result<Grammar> SchemaCompiler::compile_array(const Json& s, int depth) {
  CAI_ASSIGN_OR_RETURN(std::optional<int64_t> min_items, schema_count(s, "minItems", kMaxItemsBound));
  CAI_ASSIGN_OR_RETURN(std::optional<int64_t> max_items, schema_count(s, "maxItems", kMaxItemsBound));
  if (min_items && max_items && *min_items > *max_items) return invalid_argument("minItems: greater than maxItems");
  const int min = static_cast<int>(min_items.value_or(0));
  const int max = max_items ? static_cast<int>(*max_items) : -1;
  // A tuple's first items (prefixItems, or draft 7's items array) and the schema of the items after them.
  const Json* items = schema_member(s, "items");
  const Json* prefix = schema_member(s, "prefixItems");
  const Json* additional = schema_member(s, "additionalItems");
  if (prefix && !prefix->is_array()) return invalid_argument("prefixItems: must be an array of schemas");
  if (prefix && items && items->is_array()) return invalid_argument("items: an array next to prefixItems");
  if (!prefix && items && items->is_array()) {  // draft 7's tuple form
    prefix = items;
    items = nullptr;
  }
  const Json* rest_ptr = items ? items : prefix ? additional : nullptr;
  const Json rest = rest_ptr ? *rest_ptr : Json(true);
  if (!rest.is_boolean() && !rest.is_object()) return invalid_argument("items: must be a schema");
  const int n = prefix ? static_cast<int>(prefix->size()) : 0;
  if (n > kMaxItemsBound) return invalid_argument("prefixItems: at most {} items are supported", kMaxItemsBound);
  const int most = schema_containers::is_false(rest) ? (max < 0 ? n : std::min(max, n)) : max;  // -1: no limit
  if (most >= 0 && min > most) return invalid_argument("minItems: more items than prefixItems and items: false allow");
  std::optional<Grammar> rest_item;
  if (!schema_containers::is_false(rest) && (most < 0 || most > n)) {
    CAI_ASSIGN_OR_RETURN(rest_item, compile(rest, depth + 1));
  }
  if (n == 0) return rest_item ? json_array(*rest_item, min, most) : Grammar::literal("[]");
  // From the last item back: tail = what follows once items 0..i-1 are written. Items past `min` may be left out
  // (with everything after them); past `most` there are none.
  const Grammar comma = json_separator(',');
  Grammar tail = Grammar::literal("");
  if (rest_item) tail = repeat(Grammar::sequence({comma, *rest_item}), std::max(0, min - n), most < 0 ? -1 : most - n);
  for (int i = n - 1; i >= 0; --i) {
    if (most >= 0 && i >= most) continue;
    CAI_ASSIGN_OR_RETURN(Grammar item, compile((*prefix)[static_cast<size_t>(i)], depth + 1));
    Grammar step = i == 0 ? Grammar::sequence({item, tail}) : Grammar::sequence({comma, item, tail});
    tail = i < min ? step : Grammar::optional(step);
  }
  return Grammar::sequence({Grammar::literal("["), tail, Grammar::literal("]")});
}

}  // namespace cai::grammar
