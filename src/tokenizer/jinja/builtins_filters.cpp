// Jinja filters (`x | trim`, `x | tojson`, `xs | selectattr(...)`, ...) with jinja2's (and transformers') behaviour.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>

#include "tokenizer/jinja/builtins.h"
#include "tokenizer/jinja/evaluator.h"
#include "tokenizer/jinja/pystr.h"

namespace cai::jinja {
namespace {

using FilterFn = Result<Value> (*)(Evaluator&, const Value&, const ArgReader&);

Result<std::optional<std::string>> opt_string(const ArgReader& r, std::size_t pos, const char* name) {
  CAI_ASSIGN_OR_RETURN(Value v, r.get(pos, name, Value::none()));
  if (v.is_none() || v.is_undefined()) return std::optional<std::string>();
  if (!v.is_string()) return invalid_argument("{}() argument '{}' must be a string", r.func, name);
  return std::optional<std::string>(v.as_string());
}

// str(v), cut short past the output limit (the caller's size checks then fail instead of building it whole).
std::string text_of(Evaluator& ev, const Value& v) { return to_str(v, ev.limits().max_output_bytes); }

Result<std::int64_t> length_of(const Value& v) {
  switch (v.kind()) {
    case Kind::kUndefined: return 0;
    case Kind::kString: return static_cast<std::int64_t>(utf8_length(v.as_string()));
    case Kind::kList: return static_cast<std::int64_t>(v.as_list().items.size());
    case Kind::kDict: return static_cast<std::int64_t>(v.as_dict().size());
    default: return invalid_argument("object of type '{}' has no len()", type_name(v));
  }
}

// `attribute` arguments may be dotted ("function.name") or integer indices, as in jinja2.
Result<Value> attribute_of(Evaluator& ev, const Value& item, const Value& attribute) {
  if (!attribute.is_string()) return ev.get_item(item, attribute);
  Value cur = item;
  std::size_t start = 0;
  const std::string& path = attribute.as_string();
  while (true) {
    std::size_t dot = path.find('.', start);
    std::string part = path.substr(start, dot == std::string::npos ? std::string::npos : dot - start);
    bool numeric = !part.empty() && std::all_of(part.begin(), part.end(), [](char c) { return c >= '0' && c <= '9'; });
    Value key = numeric ? Value(static_cast<std::int64_t>(std::stoll(part.substr(0, 18)))) : Value(part);
    CAI_ASSIGN_OR_RETURN(cur, ev.get_item(cur, key));
    if (dot == std::string::npos) return cur;
    start = dot + 1;
  }
}

// Sort key for sort/min/max/unique/dictsort: strings lowercased unless case-sensitive.
Value sort_key(const Value& v, bool case_sensitive) {
  return !case_sensitive && v.is_string() ? Value(py_lower(v.as_string())) : v;
}

Result<Value> filter_select(Evaluator& ev, const Value& v, const ArgReader& r, bool by_attr, bool keep) {
  CAI_ASSIGN_OR_RETURN(std::vector<Value> items, ev.iterate(v));
  std::size_t skip = by_attr ? 1 : 0;
  CallArgs test_args;
  for (std::size_t i = skip + 1; i < r.args.positional.size(); ++i)
    test_args.positional.push_back(r.args.positional[i]);
  test_args.named = r.args.named;
  Value attr = by_attr && !r.args.positional.empty() ? r.args.positional[0] : Value();
  if (by_attr && attr.is_undefined()) return invalid_argument("{}() needs an attribute name", r.func);
  std::string test_name;
  if (r.args.positional.size() > skip) {
    if (!r.args.positional[skip].is_string()) return invalid_argument("{}() test name must be a string", r.func);
    test_name = r.args.positional[skip].as_string();
  }
  std::vector<Value> out;
  for (const Value& item : items) {
    CAI_TRY(ev.step());
    Value subject = item;
    if (by_attr) {
      CAI_ASSIGN_OR_RETURN(subject, attribute_of(ev, item, attr));
    }
    bool pass;
    if (test_name.empty()) {
      pass = truthy(subject);
    } else {
      CallArgs a = test_args;
      CAI_ASSIGN_OR_RETURN(pass, ev.test(test_name, subject, a));
    }
    if (pass == keep) out.push_back(item);
  }
  return Value::list(std::move(out));
}

Result<Value> filter_map(Evaluator& ev, const Value& v, const ArgReader& r) {
  CAI_ASSIGN_OR_RETURN(std::vector<Value> items, ev.iterate(v));
  CAI_ASSIGN_OR_RETURN(Value attribute, r.get(99, "attribute"));
  std::vector<Value> out;
  if (!attribute.is_undefined()) {
    CAI_ASSIGN_OR_RETURN(Value fallback, r.get(99, "default"));
    for (const Value& item : items) {
      CAI_TRY(ev.step());
      CAI_ASSIGN_OR_RETURN(Value x, attribute_of(ev, item, attribute));
      out.push_back(x.is_undefined() && !fallback.is_undefined() ? fallback : x);
    }
    return Value::list(std::move(out));
  }
  if (r.args.positional.empty() || !r.args.positional[0].is_string())
    return invalid_argument("map() needs a filter name or attribute=");
  std::string name = r.args.positional[0].as_string();
  CallArgs rest;
  rest.positional.assign(r.args.positional.begin() + 1, r.args.positional.end());
  rest.named = r.args.named;
  for (const Value& item : items) {
    CAI_TRY(ev.step());
    CallArgs a = rest;
    CAI_ASSIGN_OR_RETURN(Value x, ev.filter(name, item, a));
    out.push_back(std::move(x));
  }
  return Value::list(std::move(out));
}

Result<Value> filter_sort(Evaluator& ev, const Value& v, const ArgReader& r) {
  CAI_TRY(r.check_max(3, {"reverse", "case_sensitive", "attribute"}));
  CAI_ASSIGN_OR_RETURN(std::vector<Value> items, ev.iterate(v));
  CAI_ASSIGN_OR_RETURN(Value reverse, r.get(0, "reverse", false));
  CAI_ASSIGN_OR_RETURN(Value case_sensitive, r.get(1, "case_sensitive", false));
  CAI_ASSIGN_OR_RETURN(Value attribute, r.get(2, "attribute", Value::none()));
  std::vector<std::pair<Value, Value>> keyed;
  for (Value& item : items) {
    Value k = item;
    if (!attribute.is_none()) {
      CAI_ASSIGN_OR_RETURN(k, attribute_of(ev, item, attribute));
    }
    keyed.emplace_back(sort_key(k, truthy(case_sensitive)), std::move(item));
  }
  Status err;
  bool rev = truthy(reverse);
  std::stable_sort(keyed.begin(), keyed.end(), [&](const auto& a, const auto& b) {
    Result<int> c = rev ? compare(b.first, a.first) : compare(a.first, b.first);
    if (!c.ok() && err.ok()) err = c.status();
    return c.ok() && *c < 0;
  });
  CAI_TRY(err);
  std::vector<Value> out;
  for (auto& [k, item] : keyed) out.push_back(std::move(item));
  return Value::list(std::move(out));
}

Result<Value> filter_min_max(Evaluator& ev, const Value& v, const ArgReader& r, bool want_max) {
  CAI_ASSIGN_OR_RETURN(std::vector<Value> items, ev.iterate(v));
  CAI_ASSIGN_OR_RETURN(Value case_sensitive, r.get(0, "case_sensitive", false));
  CAI_ASSIGN_OR_RETURN(Value attribute, r.get(1, "attribute", Value::none()));
  if (items.empty()) return Value::undefined(fmt::format("No aggregated item, sequence was empty."));
  std::size_t best = 0;
  Value best_key;
  for (std::size_t i = 0; i < items.size(); ++i) {
    Value k = items[i];
    if (!attribute.is_none()) {
      CAI_ASSIGN_OR_RETURN(k, attribute_of(ev, items[i], attribute));
    }
    k = sort_key(k, truthy(case_sensitive));
    if (i > 0) {
      CAI_ASSIGN_OR_RETURN(int c, compare(k, best_key));
      if (want_max ? c <= 0 : c >= 0) continue;
    }
    best = i;
    best_key = std::move(k);
  }
  return items[best];
}

Result<Value> filter_tojson(Evaluator& ev, const Value& v, const ArgReader& r) {
  CAI_TRY(r.check_max(5, {"ensure_ascii", "indent", "separators", "sort_keys"}));
  JsonStyle style;
  CAI_ASSIGN_OR_RETURN(Value indent, r.get(1, "indent", Value::none()));
  CAI_ASSIGN_OR_RETURN(Value separators, r.get(2, "separators", Value::none()));
  CAI_ASSIGN_OR_RETURN(Value sort_keys, r.get(3, "sort_keys", false));
  if (indent.kind() == Kind::kInt)
    style.indent = static_cast<int>(std::clamp<std::int64_t>(indent.as_int(), 0, 64));
  else if (!indent.is_none())
    return invalid_argument("tojson() indent must be an integer");
  if (separators.kind() == Kind::kList) {
    const auto& seps = separators.as_list().items;
    if (seps.size() != 2 || !seps[0].is_string() || !seps[1].is_string())
      return invalid_argument("tojson() separators must be two strings");
    style.item_sep = seps[0].as_string();
    style.key_sep = seps[1].as_string();
  }
  style.sort_keys = truthy(sort_keys);
  style.max_bytes = ev.limits().max_output_bytes;
  CAI_ASSIGN_OR_RETURN(std::string text, to_json(v, style));
  CAI_TRY(ev.check_size(text.size()));
  return Value(std::move(text));
}

Result<Value> filter_indent(Evaluator& ev, const Value& v, const ArgReader& r) {
  CAI_ASSIGN_OR_RETURN(Value width, r.get(0, "width", 4));
  CAI_ASSIGN_OR_RETURN(Value first, r.get(1, "first", false));
  CAI_ASSIGN_OR_RETURN(Value blank, r.get(2, "blank", false));
  std::string pad = width.is_string() ? width.as_string()
                    : width.kind() == Kind::kInt
                        ? std::string(static_cast<std::size_t>(std::clamp<std::int64_t>(width.as_int(), 0, 256)), ' ')
                        : std::string();
  std::vector<std::string> lines = py_splitlines(text_of(ev, v) + "\n");
  std::string out;
  for (std::size_t i = 0; i < lines.size(); ++i) {
    if (i > 0) out += "\n" + ((truthy(blank) || !lines[i].empty()) ? pad : std::string());
    out += lines[i];
    CAI_TRY(ev.check_size(out.size()));
  }
  if (truthy(first)) out = pad + out;
  return Value(std::move(out));
}

Result<Value> filter_int(Evaluator&, const Value& v, const ArgReader& r) {
  CAI_ASSIGN_OR_RETURN(Value fallback, r.get(0, "default", 0));
  if (v.kind() == Kind::kInt || v.kind() == Kind::kBool) return Value(v.as_int());
  if (v.kind() == Kind::kFloat) {
    double d = v.as_float();
    return std::isfinite(d) && std::fabs(d) < 9.2e18 ? Value(static_cast<std::int64_t>(d)) : fallback;
  }
  if (!v.is_string()) return fallback;
  std::string s = py_strip(v.as_string(), std::nullopt, StripSide::kBoth);
  s.erase(std::remove(s.begin(), s.end(), '_'), s.end());
  char* end = nullptr;
  errno = 0;
  long long i = std::strtoll(s.c_str(), &end, 10);
  if (!s.empty() && *end == '\0' && errno == 0) return Value(static_cast<std::int64_t>(i));
  double d = std::strtod(s.c_str(), &end);
  if (!s.empty() && *end == '\0' && std::isfinite(d) && std::fabs(d) < 9.2e18)
    return Value(static_cast<std::int64_t>(d));
  return fallback;
}

Result<Value> filter_float(Evaluator&, const Value& v, const ArgReader& r) {
  CAI_ASSIGN_OR_RETURN(Value fallback, r.get(0, "default", 0.0));
  if (v.is_number()) return Value(v.as_float());
  if (!v.is_string()) return fallback;
  std::string s = py_strip(v.as_string(), std::nullopt, StripSide::kBoth);
  char* end = nullptr;
  double d = std::strtod(s.c_str(), &end);
  return !s.empty() && *end == '\0' ? Value(d) : fallback;
}

Result<Value> filter_round(Evaluator&, const Value& v, const ArgReader& r) {
  CAI_ASSIGN_OR_RETURN(Value precision, r.get(0, "precision", 0));
  CAI_ASSIGN_OR_RETURN(Value method, r.get(1, "method", "common"));
  if (!v.is_number() || precision.kind() != Kind::kInt || !method.is_string())
    return invalid_argument("round() needs a number");
  std::int64_t digits = std::clamp<std::int64_t>(precision.as_int(), -300, 300);
  const std::string& m = method.as_string();
  if (m == "common" && v.kind() != Kind::kFloat) return Value(v.as_int());
  if (m == "common" && digits >= 0) {  // Python rounds the exact binary value, half to even, like printf
    char buf[400];
    std::snprintf(buf, sizeof(buf), "%.*f", static_cast<int>(digits), v.as_float());
    return Value(std::strtod(buf, nullptr));
  }
  double scale = std::pow(10.0, static_cast<double>(digits));
  double x = v.as_float() * scale;
  if (m == "common")
    x = std::nearbyint(x);
  else if (m == "ceil")
    x = std::ceil(x);
  else if (m == "floor")
    x = std::floor(x);
  else
    return invalid_argument("method must be common, ceil or floor");
  return Value(x / scale);
}

Result<Value> filter_join(Evaluator& ev, const Value& v, const ArgReader& r) {
  CAI_ASSIGN_OR_RETURN(Value sep, r.get(0, "d", ""));
  CAI_ASSIGN_OR_RETURN(Value attribute, r.get(1, "attribute", Value::none()));
  CAI_ASSIGN_OR_RETURN(std::vector<Value> items, ev.iterate(v));
  std::string out;
  std::string sep_s = text_of(ev, sep);
  for (std::size_t i = 0; i < items.size(); ++i) {
    Value item = items[i];
    if (!attribute.is_none()) {
      CAI_ASSIGN_OR_RETURN(item, attribute_of(ev, items[i], attribute));
    }
    if (i) out += sep_s;
    out += to_str(item, ev.limits().max_output_bytes);
    CAI_TRY(ev.check_size(out.size()));
  }
  return Value(std::move(out));
}

Result<Value> filter_unique(Evaluator& ev, const Value& v, const ArgReader& r) {
  CAI_ASSIGN_OR_RETURN(Value case_sensitive, r.get(0, "case_sensitive", false));
  CAI_ASSIGN_OR_RETURN(Value attribute, r.get(1, "attribute", Value::none()));
  CAI_ASSIGN_OR_RETURN(std::vector<Value> items, ev.iterate(v));
  ValueDict seen;
  std::vector<Value> out;
  for (const Value& item : items) {
    Value k = item;
    if (!attribute.is_none()) {
      CAI_ASSIGN_OR_RETURN(k, attribute_of(ev, item, attribute));
    }
    k = sort_key(k, truthy(case_sensitive));
    if (seen.find(k)) continue;
    if (!seen.set(k, true)) return invalid_argument("unhashable type: '{}'", type_name(k));
    out.push_back(item);
  }
  return Value::list(std::move(out));
}

Result<Value> filter_dictsort(Evaluator&, const Value& v, const ArgReader& r) {
  if (v.kind() != Kind::kDict) return invalid_argument("dictsort() needs a dict, got '{}'", type_name(v));
  CAI_ASSIGN_OR_RETURN(Value case_sensitive, r.get(0, "case_sensitive", false));
  CAI_ASSIGN_OR_RETURN(Value by, r.get(1, "by", "key"));
  CAI_ASSIGN_OR_RETURN(Value reverse, r.get(2, "reverse", false));
  bool by_value = by.is_string() && by.as_string() == "value";
  std::vector<Value> pairs;
  for (const auto& [k, x] : v.as_dict().items()) pairs.push_back(Value::list({k, x}, true));
  Status err;
  std::stable_sort(pairs.begin(), pairs.end(), [&](const Value& a, const Value& b) {
    const Value& ka = sort_key(a.as_list().items[by_value ? 1 : 0], truthy(case_sensitive));
    const Value& kb = sort_key(b.as_list().items[by_value ? 1 : 0], truthy(case_sensitive));
    Result<int> c = truthy(reverse) ? compare(kb, ka) : compare(ka, kb);
    if (!c.ok() && err.ok()) err = c.status();
    return c.ok() && *c < 0;
  });
  CAI_TRY(err);
  return Value::list(std::move(pairs));
}

Result<Value> filter_default(Evaluator&, const Value& v, const ArgReader& r) {
  CAI_ASSIGN_OR_RETURN(Value fallback, r.get(0, "default_value", ""));
  CAI_ASSIGN_OR_RETURN(Value boolean, r.get(1, "boolean", false));
  return v.is_undefined() || (truthy(boolean) && !truthy(v)) ? fallback : v;
}

Result<Value> filter_replace(Evaluator& ev, const Value& v, const ArgReader& r) {
  CAI_ASSIGN_OR_RETURN(Value old_s, r.get(0, "old"));
  CAI_ASSIGN_OR_RETURN(Value new_s, r.get(1, "new"));
  CAI_ASSIGN_OR_RETURN(Value count, r.get(2, "count", Value::none()));
  std::int64_t n = count.kind() == Kind::kInt ? count.as_int() : -1;
  std::optional<std::string> out =
      py_replace(text_of(ev, v), text_of(ev, old_s), text_of(ev, new_s), n, ev.limits().max_output_bytes);
  if (!out) return invalid_argument("replace() result exceeds {} bytes", ev.limits().max_output_bytes);
  return Value(std::move(*out));
}

Result<Value> filter_escape(Evaluator& ev, const Value& v, const ArgReader&) {
  std::string out;
  for (char c : text_of(ev, v)) {
    switch (c) {
      case '&': out += "&amp;"; break;
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '"': out += "&#34;"; break;
      case '\'': out += "&#39;"; break;
      default: out.push_back(c);
    }
  }
  return Value(std::move(out));
}

Result<Value> filter_first_last(Evaluator& ev, const Value& v, bool first) {
  CAI_ASSIGN_OR_RETURN(std::vector<Value> items, ev.iterate(v));
  if (items.empty())
    return Value::undefined(first ? "No first item, sequence was empty." : "No last item, sequence was empty.");
  return first ? items.front() : items.back();
}

Result<Value> filter_sum(Evaluator& ev, const Value& v, const ArgReader& r) {
  CAI_ASSIGN_OR_RETURN(Value attribute, r.get(0, "attribute", Value::none()));
  CAI_ASSIGN_OR_RETURN(Value total, r.get(1, "start", 0));
  CAI_ASSIGN_OR_RETURN(std::vector<Value> items, ev.iterate(v));
  for (const Value& item : items) {
    Value x = item;
    if (!attribute.is_none()) {
      CAI_ASSIGN_OR_RETURN(x, attribute_of(ev, item, attribute));
    }
    CAI_ASSIGN_OR_RETURN(total, binary_op(ev, "+", total, x));
  }
  return total;
}

Result<Value> string_filter(Evaluator& ev, const Value& v, std::string (*fn)(std::string_view)) {
  return Value(fn(text_of(ev, v)));
}

struct FilterEntry {
  const char* name;
  FilterFn fn;
};

const FilterEntry kFilters[] = {
    {"abs",
     [](Evaluator&, const Value& v, const ArgReader&) -> Result<Value> {
       if (v.kind() == Kind::kFloat) return Value(std::fabs(v.as_float()));
       if (!v.is_number()) return invalid_argument("bad operand type for abs(): '{}'", type_name(v));
       if (v.as_int() == INT64_MIN) return invalid_argument("integer overflow");
       return Value(v.as_int() < 0 ? -v.as_int() : v.as_int());
     }},
    {"attr",
     [](Evaluator& ev, const Value& v, const ArgReader& r) -> Result<Value> {
       CAI_ASSIGN_OR_RETURN(Value name, r.get(0, "name"));
       if (!name.is_string()) return invalid_argument("attr() needs a string name");
       return ev.get_attr(v, name.as_string());
     }},
    {"capitalize", [](Evaluator& ev, const Value& v, const ArgReader&) { return string_filter(ev, v, py_capitalize); }},
    {"count",
     [](Evaluator&, const Value& v, const ArgReader&) -> Result<Value> {
       CAI_ASSIGN_OR_RETURN(std::int64_t n, length_of(v));
       return Value(n);
     }},
    {"default", filter_default},
    {"dictsort", filter_dictsort},
    {"escape", filter_escape},
    {"first", [](Evaluator& ev, const Value& v, const ArgReader&) { return filter_first_last(ev, v, true); }},
    {"float", filter_float},
    {"indent", filter_indent},
    {"int", filter_int},
    {"items",
     [](Evaluator&, const Value& v, const ArgReader&) -> Result<Value> {
       if (v.is_undefined()) return Value::list({});
       if (v.kind() != Kind::kDict) return invalid_argument("items() needs a mapping, got '{}'", type_name(v));
       std::vector<Value> pairs;
       for (const auto& [k, x] : v.as_dict().items()) pairs.push_back(Value::list({k, x}, true));
       return Value::list(std::move(pairs));
     }},
    {"join", filter_join},
    {"last", [](Evaluator& ev, const Value& v, const ArgReader&) { return filter_first_last(ev, v, false); }},
    {"list",
     [](Evaluator& ev, const Value& v, const ArgReader&) -> Result<Value> {
       CAI_ASSIGN_OR_RETURN(std::vector<Value> items, ev.iterate(v));
       return Value::list(std::move(items));
     }},
    {"lower", [](Evaluator& ev, const Value& v, const ArgReader&) { return string_filter(ev, v, py_lower); }},
    {"map", filter_map},
    {"max", [](Evaluator& ev, const Value& v, const ArgReader& r) { return filter_min_max(ev, v, r, true); }},
    {"min", [](Evaluator& ev, const Value& v, const ArgReader& r) { return filter_min_max(ev, v, r, false); }},
    {"reject", [](Evaluator& ev, const Value& v, const ArgReader& r) { return filter_select(ev, v, r, false, false); }},
    {"rejectattr",
     [](Evaluator& ev, const Value& v, const ArgReader& r) { return filter_select(ev, v, r, true, false); }},
    {"replace", filter_replace},
    {"reverse",
     [](Evaluator& ev, const Value& v, const ArgReader&) -> Result<Value> {
       if (v.is_string()) {
         std::u32string u = utf8_decode(v.as_string());
         return Value(utf8_encode(std::u32string(u.rbegin(), u.rend())));
       }
       CAI_ASSIGN_OR_RETURN(std::vector<Value> items, ev.iterate(v));
       std::reverse(items.begin(), items.end());
       return Value::list(std::move(items));
     }},
    {"round", filter_round},
    {"safe", [](Evaluator&, const Value& v, const ArgReader&) -> Result<Value> { return v; }},
    {"select", [](Evaluator& ev, const Value& v, const ArgReader& r) { return filter_select(ev, v, r, false, true); }},
    {"selectattr",
     [](Evaluator& ev, const Value& v, const ArgReader& r) { return filter_select(ev, v, r, true, true); }},
    {"sort", filter_sort},
    {"string",
     [](Evaluator& ev, const Value& v, const ArgReader&) -> Result<Value> {
       std::string s = to_str(v, ev.limits().max_output_bytes);
       CAI_TRY(ev.check_size(s.size()));
       return Value(std::move(s));
     }},
    {"sum", filter_sum},
    {"title", [](Evaluator& ev, const Value& v, const ArgReader&) { return string_filter(ev, v, py_title); }},
    {"tojson", filter_tojson},
    {"trim",
     [](Evaluator& ev, const Value& v, const ArgReader& r) -> Result<Value> {
       CAI_ASSIGN_OR_RETURN(std::optional<std::string> chars, opt_string(r, 0, "chars"));
       return Value(py_strip(text_of(ev, v), chars, StripSide::kBoth));
     }},
    {"unique", filter_unique},
    {"upper", [](Evaluator& ev, const Value& v, const ArgReader&) { return string_filter(ev, v, py_upper); }},
};

const char* canonical_filter(std::string_view name) {
  if (name == "d") return "default";
  if (name == "e") return "escape";
  if (name == "length") return "count";
  for (const FilterEntry& f : kFilters) {
    if (name == f.name) return f.name;
  }
  return nullptr;
}

}  // namespace

bool has_filter(std::string_view name) { return canonical_filter(name) != nullptr; }

Result<Value> apply_filter(Evaluator& ev, const std::string& name, const Value& subject, CallArgs& args) {
  const char* canon = canonical_filter(name);
  if (!canon) return invalid_argument("no filter named '{}'", name);
  for (const FilterEntry& f : kFilters) {
    if (std::strcmp(f.name, canon) == 0) return f.fn(ev, subject, ArgReader{canon, args});
  }
  return internal_error("filter table out of sync for '{}'", name);
}

}  // namespace cai::jinja
