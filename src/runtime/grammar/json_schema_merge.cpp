// Schema conjunction: allOf, a $ref with constraining siblings, and the siblings of anyOf/oneOf become one schema
// whose keywords say what both say (types intersected, bounds tightened, properties merged one by one). Keywords
// whose conjunction has no single-keyword form (two different anyOf, two formats) are refused by name.
#include <algorithm>
#include <set>

#include "runtime/grammar/json_grammar.h"
#include "runtime/grammar/json_schema_compiler.h"

namespace cai::grammar {

namespace {
namespace schema_merge {

const Json kFalse = false;

bool has_constraints(const Json& s) {
  if (!s.is_object()) return true;
  for (const auto& [key, value] : s.items())
    if (is_constraining_keyword(key)) return true;
  return false;
}

// Types in both lists ("integer" is a "number"); nullopt when none.
std::optional<Json> intersect_types(const std::vector<std::string>& a, const std::vector<std::string>& b) {
  std::vector<std::string> both;
  for (const std::string& x : a)
    for (const std::string& y : b) {
      std::string t;  // the type of the values of both x and y, if any
      if (x == y)
        t = x;
      else if ((x == "integer" && y == "number") || (x == "number" && y == "integer"))
        t = "integer";
      if (!t.empty() && std::find(both.begin(), both.end(), t) == both.end()) both.push_back(t);
    }
  if (both.empty()) return std::nullopt;
  return both.size() == 1 ? Json(both[0]) : Json(both);
}

// The tighter of two numeric bounds: the larger for a lower bound, the smaller for an upper one.
std::optional<Json> tighter(const Json& a, const Json& b, bool lower) {
  const std::optional<Decimal> x = decimal_of(a), y = decimal_of(b);
  if (!x || !y) return std::nullopt;
  const int order = compare_decimals(*x, *y);
  return (order >= 0) == lower ? a : b;
}

// `pattern` as a list (one pattern, or the list merging built).
std::vector<Json> patterns_of(const Json& p) {
  return p.is_array() ? std::vector<Json>(p.begin(), p.end()) : std::vector<Json>{p};
}

}  // namespace schema_merge
}  // namespace

Result<Grammar> SchemaCompiler::compile_merged(const Json& s, int depth) {
  Json rest = s;
  if (const Json* all = schema_member(s, "allOf")) {
    if (!all->is_array() || all->empty()) return invalid_argument("allOf: must be a non-empty array");
    rest.erase("allOf");
    for (const Json& sub : *all) {
      CAI_ASSIGN_OR_RETURN(rest, merge(rest, sub, "allOf", depth + 1));
      if (rest.is_boolean() && !rest.get<bool>())
        return invalid_argument("allOf: the subschemas contradict each other (no value is valid against all)");
    }
    return compile(rest, depth + 1);
  }
  rest.erase("$ref");
  CAI_ASSIGN_OR_RETURN(Json merged, merge(Json{{"$ref", s["$ref"]}}, rest, "$ref", depth + 1));
  if (merged.is_boolean() && !merged.get<bool>())
    return invalid_argument("$ref: the sibling keywords contradict the referenced schema");
  return compile(merged, depth + 1);
}

Result<Json> SchemaCompiler::merge(const Json& a, const Json& b, const std::string& keyword, int depth) const {
  if (depth > kMaxSchemaDepth) return invalid_argument("{}: nested deeper than {} levels", keyword, kMaxSchemaDepth);
  // A side that constrains nothing leaves the other as it is; a side that allows nothing allows nothing.
  for (const Json* side : {&a, &b}) {
    if (side->is_boolean() && !side->get<bool>()) return schema_merge::kFalse;
    if (!side->is_boolean() && !side->is_object())
      return invalid_argument("{}: a schema must be an object or a boolean", keyword);
  }
  if (!schema_merge::has_constraints(b) || b.is_boolean()) return a;
  if (!schema_merge::has_constraints(a) || a.is_boolean()) return b;
  // A $ref or an allOf on either side is replaced by what it stands for.
  Json x = a, y = b;
  for (Json* side : {&x, &y}) {
    if (const Json* ref = schema_member(*side, "$ref")) {
      CAI_ASSIGN_OR_RETURN(const Json* target, resolve(*ref));
      Json siblings = *side;
      siblings.erase("$ref");
      CAI_ASSIGN_OR_RETURN(*side, merge(*target, siblings, keyword, depth + 1));
    }
    if (const Json* all = schema_member(*side, "allOf"); all && all->is_array()) {
      Json acc = *side;
      acc.erase("allOf");
      for (const Json& sub : *all) {
        CAI_ASSIGN_OR_RETURN(acc, merge(acc, sub, keyword, depth + 1));
      }
      *side = acc;
    }
    if (side->is_boolean()) return side->get<bool>() ? merge(x, y, keyword, depth + 1) : schema_merge::kFalse;
  }
  Json out = x;
  CAI_TRY(merge_properties(x, y, out, keyword, depth));
  for (const auto& [key, bv] : y.items()) {
    if (key == "properties" || key == "additionalProperties") continue;
    auto it = out.find(key);
    if (it == out.end()) {
      out[key] = bv;
      continue;
    }
    const Json av = *it;
    if (av == bv || !is_constraining_keyword(key)) continue;  // an annotation keeps the first side's
    if (key == "type") {
      CAI_ASSIGN_OR_RETURN(std::vector<std::string> ta, schema_types(x));
      CAI_ASSIGN_OR_RETURN(std::vector<std::string> tb, schema_types(y));
      std::optional<Json> both = schema_merge::intersect_types(ta, tb);
      if (!both) return schema_merge::kFalse;
      out[key] = *both;
    } else if (key == "required" && av.is_array() && bv.is_array()) {
      for (const Json& r : bv)
        if (std::find(av.begin(), av.end(), r) == av.end()) out[key].push_back(r);
    } else if (key == "enum" && av.is_array() && bv.is_array()) {
      Json kept = Json::array();
      for (const Json& v : av)
        if (std::find(bv.begin(), bv.end(), v) != bv.end()) kept.push_back(v);
      if (kept.empty()) return schema_merge::kFalse;
      out[key] = kept;
    } else if (key == "const") {
      return schema_merge::kFalse;  // two different values
    } else if (key == "pattern") {
      std::vector<Json> all = schema_merge::patterns_of(av);
      for (const Json& p : schema_merge::patterns_of(bv))
        if (std::find(all.begin(), all.end(), p) == all.end()) all.push_back(p);
      out[key] = all;  // every pattern must match (json_schema_scalars.cpp intersects them)
    } else if (key == "items" || key == "propertyNames" || key == "additionalItems") {
      CAI_ASSIGN_OR_RETURN(out[key], merge(av, bv, keyword, depth + 1));
    } else if (std::optional<Json> t =
                   schema_merge::tighter(av, bv, key.starts_with("min") || key == "exclusiveMinimum")) {
      out[key] = *t;  // minimum, maxLength, exclusiveMaximum, ...
    } else {
      return invalid_argument("{}: combining two different '{}' is not supported", keyword, key);
    }
  }
  return out;
}

Status SchemaCompiler::merge_properties(const Json& a, const Json& b, Json& out, const std::string& keyword,
                                        int depth) const {
  const Json* pa = schema_member(a, "properties");
  const Json* pb = schema_member(b, "properties");
  const Json* ea = schema_member(a, "additionalProperties");
  const Json* eb = schema_member(b, "additionalProperties");
  if (!pa && !pb && !ea && !eb) return Status::ok_status();
  for (const Json* p : {pa, pb})
    if (p && !p->is_object()) return invalid_argument("properties: must be an object");
  const Json any = true;
  // A property one side does not list must match that side's additionalProperties.
  Json props = Json::object();
  for (const Json* p : {pa, pb}) {
    if (!p) continue;
    for (const auto& [name, unused] : p->items()) {
      if (props.contains(name)) continue;
      const Json& sa = pa && pa->contains(name) ? (*pa)[name] : ea ? *ea : any;
      const Json& sb = pb && pb->contains(name) ? (*pb)[name] : eb ? *eb : any;
      CAI_ASSIGN_OR_RETURN(props[name], merge(sa, sb, keyword, depth + 1));
    }
  }
  if (pa || pb) out["properties"] = props;
  if (ea || eb) {
    CAI_ASSIGN_OR_RETURN(out["additionalProperties"], merge(ea ? *ea : any, eb ? *eb : any, keyword, depth + 1));
  }
  return Status::ok_status();
}

}  // namespace cai::grammar
