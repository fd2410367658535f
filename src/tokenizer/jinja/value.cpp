// Jinja runtime values: construction, Python truthiness/str/repr/equality/ordering, and JSON in and out.
#include "tokenizer/jinja/value.h"

#include <algorithm>
#include <cmath>

#include "tokenizer/jinja/pystr.h"

namespace cai::jinja {

const Value* ValueDict::find(const Value& key) const {
  std::optional<std::string> k = hash_key(key);
  if (!k) return nullptr;
  auto it = index_.find(*k);
  return it == index_.end() ? nullptr : &items_[it->second].second;
}

bool ValueDict::set(const Value& key, Value value) {
  std::optional<std::string> k = hash_key(key);
  if (!k) return false;
  auto [it, inserted] = index_.emplace(*k, items_.size());
  if (inserted) {
    items_.emplace_back(key, std::move(value));
  } else {
    items_[it->second].second = std::move(value);
  }
  return true;
}

Value Value::undefined(std::string hint) {
  Value v;
  v.v_ = Undef{std::move(hint)};
  return v;
}

Value Value::none() {
  Value v;
  v.v_ = nullptr;
  return v;
}

Value Value::list(std::vector<Value> items, bool is_tuple) {
  int depth = 0;
  for (const Value& x : items) depth = std::max(depth, x.depth());
  Value v;
  v.v_ = ListPtr{std::make_shared<const ValueList>(ValueList{std::move(items), is_tuple}), depth + 1};
  return v;
}

Value Value::dict(ValueDict d) {
  int depth = 0;
  for (const auto& [k, x] : d.items()) depth = std::max(depth, x.depth());
  Value v;
  v.v_ = DictPtr{std::make_shared<const ValueDict>(std::move(d)), depth + 1};
  return v;
}

Value Value::make_namespace(ValueDict attrs) {
  Value v;
  v.v_ = std::make_shared<Namespace>(Namespace{std::move(attrs)});
  return v;
}

Value Value::callable(std::string name, NativeFn fn) {
  Value v;
  v.v_ = std::make_shared<const Callable>(Callable{std::move(name), std::move(fn)});
  return v;
}

std::int64_t Value::as_int() const {
  return kind() == Kind::kBool ? static_cast<std::int64_t>(as_bool()) : std::get<std::int64_t>(v_);
}

double Value::as_float() const { return kind() == Kind::kFloat ? std::get<double>(v_) : static_cast<double>(as_int()); }

int Value::depth() const {
  if (kind() == Kind::kList) return std::get<ListPtr>(v_).depth;
  if (kind() == Kind::kDict) return std::get<DictPtr>(v_).depth;
  return 0;
}

bool Value::same_object(const Value& o) const {
  if (kind() != o.kind()) return false;
  switch (kind()) {
    case Kind::kNamespace: return &as_namespace() == &o.as_namespace();
    case Kind::kCallable: return &as_callable() == &o.as_callable();
    case Kind::kList: return &as_list() == &o.as_list();
    case Kind::kDict: return &as_dict() == &o.as_dict();
    default: return equals(*this, o);
  }
}

bool truthy(const Value& v) {
  switch (v.kind()) {
    case Kind::kUndefined:
    case Kind::kNone: return false;
    case Kind::kBool: return v.as_bool();
    case Kind::kInt: return v.as_int() != 0;
    case Kind::kFloat: return v.as_float() != 0.0;
    case Kind::kString: return !v.as_string().empty();
    case Kind::kList: return !v.as_list().items.empty();
    case Kind::kDict: return v.as_dict().size() != 0;
    default: return true;
  }
}

static std::string repr_list(const ValueList& l, std::size_t limit) {
  std::string out = l.is_tuple ? "(" : "[";
  for (std::size_t i = 0; i < l.items.size() && out.size() <= limit; ++i) {
    if (i) out += ", ";
    out += repr(l.items[i], limit - std::min(limit, out.size()));
  }
  if (l.is_tuple && l.items.size() == 1) out += ",";
  return out + (l.is_tuple ? ")" : "]");
}

std::string to_str(const Value& v, std::size_t limit) {
  switch (v.kind()) {
    case Kind::kUndefined: return "";
    case Kind::kNone: return "None";
    case Kind::kBool: return v.as_bool() ? "True" : "False";
    case Kind::kInt: return std::to_string(v.as_int());
    case Kind::kFloat: return py_repr_float(v.as_float());
    case Kind::kString: return v.as_string();
    case Kind::kList: return repr_list(v.as_list(), limit);
    case Kind::kDict: {
      std::string out = "{";
      bool first = true;
      for (const auto& [k, x] : v.as_dict().items()) {
        if (out.size() > limit) break;
        if (!first) out += ", ";
        first = false;
        out += repr(k) + ": " + repr(x, limit - std::min(limit, out.size()));
      }
      return out + "}";
    }
    case Kind::kNamespace: return "<Namespace>";
    case Kind::kCallable: return "<function " + v.as_callable().name + ">";
  }
  return "";
}

std::string repr(const Value& v, std::size_t limit) {
  if (v.is_string()) return py_repr_string(v.as_string());
  if (v.is_undefined()) return "Undefined";
  return to_str(v, limit);
}

bool equals(const Value& a, const Value& b) {
  if (a.is_number() && b.is_number()) {
    if (a.kind() != Kind::kFloat && b.kind() != Kind::kFloat) return a.as_int() == b.as_int();
    return a.as_float() == b.as_float();
  }
  if (a.kind() != b.kind()) return false;
  switch (a.kind()) {
    case Kind::kUndefined:
    case Kind::kNone: return true;
    case Kind::kString: return a.as_string() == b.as_string();
    case Kind::kList: {
      const ValueList& x = a.as_list();
      const ValueList& y = b.as_list();
      if (x.is_tuple != y.is_tuple || x.items.size() != y.items.size()) return false;
      for (std::size_t i = 0; i < x.items.size(); ++i) {
        if (!equals(x.items[i], y.items[i])) return false;
      }
      return true;
    }
    case Kind::kDict: {
      if (a.as_dict().size() != b.as_dict().size()) return false;
      for (const auto& [k, x] : a.as_dict().items()) {
        const Value* y = b.as_dict().find(k);
        if (!y || !equals(x, *y)) return false;
      }
      return true;
    }
    default: return a.same_object(b);
  }
}

Result<int> compare(const Value& a, const Value& b) {
  if (a.is_number() && b.is_number()) {
    if (a.kind() != Kind::kFloat && b.kind() != Kind::kFloat)
      return (a.as_int() > b.as_int()) - (a.as_int() < b.as_int());
    return (a.as_float() > b.as_float()) - (a.as_float() < b.as_float());
  }
  if (a.is_string() && b.is_string())
    return a.as_string().compare(b.as_string()) < 0 ? -1 : a.as_string() == b.as_string() ? 0 : 1;
  if (a.kind() == Kind::kList && b.kind() == Kind::kList && a.as_list().is_tuple == b.as_list().is_tuple) {
    const auto& x = a.as_list().items;
    const auto& y = b.as_list().items;
    for (std::size_t i = 0; i < x.size() && i < y.size(); ++i) {
      if (equals(x[i], y[i])) continue;
      return compare(x[i], y[i]);
    }
    return (x.size() > y.size()) - (x.size() < y.size());
  }
  return invalid_argument("'<' not supported between instances of '{}' and '{}'", type_name(a), type_name(b));
}

std::string type_name(const Value& v) {
  switch (v.kind()) {
    case Kind::kUndefined: return "Undefined";
    case Kind::kNone: return "NoneType";
    case Kind::kBool: return "bool";
    case Kind::kInt: return "int";
    case Kind::kFloat: return "float";
    case Kind::kString: return "str";
    case Kind::kList: return v.as_list().is_tuple ? "tuple" : "list";
    case Kind::kDict: return "dict";
    case Kind::kNamespace: return "Namespace";
    case Kind::kCallable: return "function";
  }
  return "object";
}

std::optional<std::string> hash_key(const Value& v) {
  switch (v.kind()) {
    case Kind::kString: return "s" + v.as_string();
    case Kind::kNone: return std::string("n");
    case Kind::kBool:
    case Kind::kInt: return "i" + std::to_string(v.as_int());
    case Kind::kFloat: {
      double d = v.as_float();
      if (std::isfinite(d) && d == std::floor(d) && std::fabs(d) < 9e18) {
        return "i" + std::to_string(static_cast<std::int64_t>(d));
      }
      return "f" + py_repr_float(d);
    }
    default: return std::nullopt;
  }
}

template <class Json>
static Result<Value> from_json_impl(const Json& j, int depth) {
  if (depth > kMaxValueDepth) return invalid_argument("JSON nested deeper than {} levels", kMaxValueDepth);
  switch (j.type()) {
    case nlohmann::json::value_t::null: return Value::none();
    case nlohmann::json::value_t::boolean: return Value(j.template get<bool>());
    case nlohmann::json::value_t::number_integer: return Value(j.template get<std::int64_t>());
    case nlohmann::json::value_t::number_unsigned: {
      auto u = j.template get<std::uint64_t>();
      if (u <= static_cast<std::uint64_t>(INT64_MAX)) return Value(static_cast<std::int64_t>(u));
      return Value(static_cast<double>(u));
    }
    case nlohmann::json::value_t::number_float: return Value(j.template get<double>());
    case nlohmann::json::value_t::string: return Value(j.template get<std::string>());
    case nlohmann::json::value_t::array: {
      std::vector<Value> items;
      items.reserve(j.size());
      for (const auto& x : j) {
        CAI_ASSIGN_OR_RETURN(Value v, from_json_impl(x, depth + 1));
        items.push_back(std::move(v));
      }
      return Value::list(std::move(items));
    }
    case nlohmann::json::value_t::object: {
      ValueDict d;
      for (auto it = j.begin(); it != j.end(); ++it) {
        CAI_ASSIGN_OR_RETURN(Value v, from_json_impl(it.value(), depth + 1));
        d.set(Value(it.key()), std::move(v));
      }
      return Value::dict(std::move(d));
    }
    default: return invalid_argument("unsupported JSON value type '{}'", j.type_name());
  }
}

Result<Value> from_json(const nlohmann::json& j) { return from_json_impl(j, 1); }
Result<Value> from_json(const nlohmann::ordered_json& j) { return from_json_impl(j, 1); }

static Result<std::string> json_key(const Value& k) {
  switch (k.kind()) {
    case Kind::kString: return k.as_string();
    case Kind::kNone: return std::string("null");
    case Kind::kBool: return std::string(k.as_bool() ? "true" : "false");
    case Kind::kInt:
    case Kind::kFloat: return to_str(k);
    default: return invalid_argument("keys must be str, int, float, bool or None, not {}", type_name(k));
  }
}

static Result<std::string> to_json_at(const Value& v, const JsonStyle& style, int level);

static std::string json_newline(const JsonStyle& style, int level) {
  return "\n" + std::string(static_cast<std::size_t>(style.indent * level), ' ');
}

static Result<std::string> json_container(const Value& v, const JsonStyle& style, int level) {
  bool is_list = v.kind() == Kind::kList;
  std::vector<std::pair<std::string, const Value*>> entries;
  if (is_list) {
    for (const Value& x : v.as_list().items) entries.emplace_back(std::string(), &x);
  } else {
    for (const auto& [k, x] : v.as_dict().items()) {
      if (style.sort_keys && !k.is_string()) return invalid_argument("tojson sort_keys needs string keys");
      CAI_ASSIGN_OR_RETURN(std::string key, json_key(k));
      entries.emplace_back(std::move(key), &x);
    }
    if (style.sort_keys)
      std::stable_sort(entries.begin(), entries.end(), [](auto& a, auto& b) { return a.first < b.first; });
  }
  std::string open = is_list ? "[" : "{", close = is_list ? "]" : "}";
  if (entries.empty()) return open + close;
  bool pretty = style.indent >= 0;
  std::string item_sep = !style.item_sep.empty() ? style.item_sep : pretty ? "," : ", ";
  std::string out = open;
  for (std::size_t i = 0; i < entries.size(); ++i) {
    if (out.size() > style.max_bytes) return invalid_argument("tojson output exceeds {} bytes", style.max_bytes);
    if (i) out += item_sep;
    if (pretty) out += json_newline(style, level + 1);
    if (!is_list) out += json_quote(entries[i].first) + style.key_sep;
    CAI_ASSIGN_OR_RETURN(std::string item, to_json_at(*entries[i].second, style, level + 1));
    out += item;
  }
  if (pretty) out += json_newline(style, level);
  return out + close;
}

static Result<std::string> to_json_at(const Value& v, const JsonStyle& style, int level) {
  switch (v.kind()) {
    case Kind::kNone: return std::string("null");
    case Kind::kBool: return std::string(v.as_bool() ? "true" : "false");
    case Kind::kInt: return std::to_string(v.as_int());
    case Kind::kFloat: {
      double d = v.as_float();
      if (std::isnan(d)) return std::string("NaN");
      if (std::isinf(d)) return std::string(d < 0 ? "-Infinity" : "Infinity");
      return py_repr_float(d);
    }
    case Kind::kString: return json_quote(v.as_string());
    case Kind::kList:
    case Kind::kDict: return json_container(v, style, level);
    default: return invalid_argument("Object of type {} is not JSON serializable", type_name(v));
  }
}

Result<std::string> to_json(const Value& v, const JsonStyle& style) { return to_json_at(v, style, 0); }

}  // namespace cai::jinja
