// Jinja operators with Python semantics: attribute/item access, slicing, iteration, calls, arithmetic, `in`.
#include <cmath>

#include "tokenizer/jinja/builtins.h"
#include "tokenizer/jinja/evaluator.h"
#include "tokenizer/jinja/pystr.h"

namespace cai::jinja {

static Value no_attribute(const Value& obj, const std::string& name) {
  return Value::undefined(fmt::format("'{} object' has no attribute '{}'", type_name(obj), name));
}

Result<Value> Evaluator::get_attr(const Value& obj, const std::string& name) {
  if (obj.is_undefined()) return undefined_error(obj);
  if (std::optional<Value> m = bound_method(obj, name)) return *m;
  if (obj.kind() == Kind::kDict) {
    const Value* v = obj.as_dict().find(Value(name));
    return v ? *v : no_attribute(obj, name);
  }
  if (obj.kind() == Kind::kNamespace) {
    const Value* v = obj.as_namespace().attrs.find(Value(name));
    return v ? *v : no_attribute(obj, name);
  }
  return no_attribute(obj, name);
}

Result<Value> Evaluator::get_item(const Value& obj, const Value& key) {
  if (obj.is_undefined()) return undefined_error(obj);
  bool int_key = key.kind() == Kind::kInt || key.kind() == Kind::kBool;
  if (obj.kind() == Kind::kDict) {
    if (const Value* v = obj.as_dict().find(key)) return *v;
  } else if (int_key && (obj.kind() == Kind::kList || obj.is_string())) {
    std::int64_t i = key.as_int();
    if (obj.kind() == Kind::kList) {
      auto n = static_cast<std::int64_t>(obj.as_list().items.size());
      if (i < 0) i += n;
      if (i >= 0 && i < n) return obj.as_list().items[static_cast<std::size_t>(i)];
    } else {
      std::u32string u = utf8_decode(obj.as_string());
      auto n = static_cast<std::int64_t>(u.size());
      if (i < 0) i += n;
      if (i >= 0 && i < n) return Value(utf8_encode(std::u32string(1, u[static_cast<std::size_t>(i)])));
    }
    return Value::undefined(fmt::format("{} object has no element {}", type_name(obj), key.as_int()));
  }
  if (key.is_string()) return get_attr(obj, key.as_string());
  return Value::undefined(fmt::format("'{} object' has no attribute {}", type_name(obj), repr(key)));
}

Result<std::vector<Value>> Evaluator::iterate(const Value& v) {
  switch (v.kind()) {
    case Kind::kUndefined: return std::vector<Value>();
    case Kind::kList: return v.as_list().items;
    case Kind::kDict: {
      std::vector<Value> keys;
      for (const auto& [k, x] : v.as_dict().items()) keys.push_back(k);
      return keys;
    }
    case Kind::kString: {
      CAI_TRY(check_items(v.as_string().size()));
      std::vector<Value> chars;
      for (char32_t c : utf8_decode(v.as_string())) chars.emplace_back(utf8_encode(std::u32string(1, c)));
      return chars;
    }
    default: return invalid_argument("'{}' object is not iterable", type_name(v));
  }
}

Result<Value> Evaluator::call(const Value& callee, CallArgs& args) {
  if (callee.is_undefined()) return undefined_error(callee);
  if (callee.kind() != Kind::kCallable) return invalid_argument("'{}' object is not callable", type_name(callee));
  return callee.as_callable().fn(*this, args);
}

Result<Value> Evaluator::filter(const std::string& name, const Value& subject, CallArgs& args) {
  return apply_filter(*this, name, subject, args);
}

Result<bool> Evaluator::test(const std::string& name, const Value& subject, CallArgs& args) {
  return apply_test(*this, name, subject, args);
}

// Python slice bounds for a sequence of length n (PySlice_AdjustIndices).
static Result<std::vector<std::size_t>> slice_indices(std::int64_t n, const Value parts[3]) {
  std::int64_t bound[3] = {0, 0, 1};
  for (int k = 0; k < 3; ++k) {
    if (parts[k].is_none() || parts[k].is_undefined()) continue;
    if (parts[k].kind() != Kind::kInt && parts[k].kind() != Kind::kBool) {
      return invalid_argument("slice indices must be integers or None, not '{}'", type_name(parts[k]));
    }
    bound[k] = parts[k].as_int();
  }
  std::int64_t step = bound[2];
  if (step == 0) return invalid_argument("slice step cannot be zero");
  auto adjust = [&](const Value& given, std::int64_t v, bool is_start) {
    if (given.is_none() || given.is_undefined()) return step < 0 ? (is_start ? n - 1 : -1) : (is_start ? 0 : n);
    if (v < 0) {
      v += n;
      if (v < 0) v = step < 0 ? -1 : 0;
    } else if (v >= n) {
      v = step < 0 ? n - 1 : n;
    }
    return v;
  };
  std::int64_t start = adjust(parts[0], bound[0], true);
  std::int64_t stop = adjust(parts[1], bound[1], false);
  std::vector<std::size_t> idx;
  for (std::int64_t i = start; step > 0 ? i < stop : i > stop; i += step) idx.push_back(static_cast<std::size_t>(i));
  return idx;
}

Result<Value> Evaluator::eval_slice(const Expr& e) {
  CAI_ASSIGN_OR_RETURN(Value obj, eval(*e.args[0]));
  Value parts[3] = {Value::none(), Value::none(), Value::none()};
  for (int k = 0; k < 3; ++k) {
    if (e.args[static_cast<std::size_t>(k) + 1]) {
      CAI_ASSIGN_OR_RETURN(parts[k], eval(*e.args[static_cast<std::size_t>(k) + 1]));
    }
  }
  if (obj.is_undefined()) return undefined_error(obj);
  if (obj.kind() == Kind::kList) {
    const ValueList& l = obj.as_list();
    CAI_ASSIGN_OR_RETURN(std::vector<std::size_t> idx, slice_indices(static_cast<std::int64_t>(l.items.size()), parts));
    std::vector<Value> out;
    for (std::size_t i : idx) out.push_back(l.items[i]);
    return Value::list(std::move(out), l.is_tuple);
  }
  if (obj.is_string()) {
    std::u32string u = utf8_decode(obj.as_string());
    CAI_ASSIGN_OR_RETURN(std::vector<std::size_t> idx, slice_indices(static_cast<std::int64_t>(u.size()), parts));
    std::u32string out;
    for (std::size_t i : idx) out.push_back(u[i]);
    return Value(utf8_encode(out));
  }
  return invalid_argument("'{}' object is not subscriptable", type_name(obj));
}

static Status unsupported_operands(const std::string& op, const Value& a, const Value& b) {
  return invalid_argument("unsupported operand type(s) for {}: '{}' and '{}'", op, type_name(a), type_name(b));
}

static Result<Value> repeat(Evaluator& ev, const Value& seq, std::int64_t times) {
  times = std::max<std::int64_t>(times, 0);
  if (seq.is_string()) {
    const std::string& s = seq.as_string();
    if (!s.empty() && times > 0)
      CAI_TRY(ev.check_size(s.size() * static_cast<std::size_t>(std::min<std::int64_t>(times, INT32_MAX))));
    std::string out;
    for (std::int64_t i = 0; i < times && !s.empty(); ++i) out += s;
    return Value(std::move(out));
  }
  const ValueList& l = seq.as_list();
  if (!l.items.empty() && times > 0)
    CAI_TRY(ev.check_items(l.items.size() * static_cast<std::size_t>(std::min<std::int64_t>(times, INT32_MAX))));
  std::vector<Value> out;
  for (std::int64_t i = 0; i < times && !l.items.empty(); ++i) out.insert(out.end(), l.items.begin(), l.items.end());
  return Value::list(std::move(out), l.is_tuple);
}

static Result<Value> int_op(const std::string& op, std::int64_t x, std::int64_t y) {
  std::int64_t r = 0;
  bool overflow = false;
  if (op == "+")
    overflow = __builtin_add_overflow(x, y, &r);
  else if (op == "-")
    overflow = __builtin_sub_overflow(x, y, &r);
  else if (op == "*")
    overflow = __builtin_mul_overflow(x, y, &r);
  else if (op == "//" || op == "%") {
    if (y == 0) return invalid_argument("integer division or modulo by zero");
    if (x == INT64_MIN && y == -1) return invalid_argument("integer overflow");
    std::int64_t q = x / y, m = x % y;
    if (m != 0 && ((m < 0) != (y < 0))) {
      q -= 1;
      m += y;
    }
    r = op == "//" ? q : m;
  } else if (op == "**") {
    if (y < 0) return Value(std::pow(static_cast<double>(x), static_cast<double>(y)));
    r = 1;
    for (std::int64_t i = 0; i < y && !overflow; ++i) {
      overflow = __builtin_mul_overflow(r, x, &r);
      if (r == 0 || r == 1) break;
      if (r == -1) {
        r = ((y - i - 1) % 2 == 0) ? -1 : 1;
        break;
      }
    }
  }
  if (overflow) return invalid_argument("integer overflow in '{}'", op);
  return Value(r);
}

static Result<Value> float_op(const std::string& op, double x, double y) {
  if (op == "+") return Value(x + y);
  if (op == "-") return Value(x - y);
  if (op == "*") return Value(x * y);
  if (op == "/" || op == "//" || op == "%") {
    if (y == 0) return invalid_argument("float division by zero");
    if (op == "/") return Value(x / y);
    if (op == "//") return Value(std::floor(x / y));
    double m = std::fmod(x, y);
    if (m != 0 && ((m < 0) != (y < 0))) m += y;
    return Value(m);
  }
  return Value(std::pow(x, y));
}

Result<Value> binary_op(Evaluator& ev, const std::string& op, const Value& a, const Value& b) {
  if (op == "~") {
    std::size_t limit = ev.limits().max_output_bytes;
    std::string s = to_str(a, limit) + to_str(b, limit);
    CAI_TRY(ev.check_size(s.size()));
    return Value(std::move(s));
  }
  if (a.is_undefined()) return undefined_error(a);
  if (b.is_undefined()) return undefined_error(b);
  if (a.is_number() && b.is_number()) {
    bool any_float = a.kind() == Kind::kFloat || b.kind() == Kind::kFloat;
    if (op == "/") {
      if (b.as_float() == 0) return invalid_argument("division by zero");
      return Value(a.as_float() / b.as_float());
    }
    return any_float ? float_op(op, a.as_float(), b.as_float()) : int_op(op, a.as_int(), b.as_int());
  }
  if (op == "+" && a.is_string() && b.is_string()) {
    CAI_TRY(ev.check_size(a.as_string().size() + b.as_string().size()));
    return Value(a.as_string() + b.as_string());
  }
  if (op == "+" && a.kind() == Kind::kList && b.kind() == Kind::kList && a.as_list().is_tuple == b.as_list().is_tuple) {
    CAI_TRY(ev.check_items(a.as_list().items.size() + b.as_list().items.size()));
    std::vector<Value> items = a.as_list().items;
    items.insert(items.end(), b.as_list().items.begin(), b.as_list().items.end());
    return Value::list(std::move(items), a.as_list().is_tuple);
  }
  if (op == "*") {
    bool a_seq = a.is_string() || a.kind() == Kind::kList;
    bool b_seq = b.is_string() || b.kind() == Kind::kList;
    bool a_int = a.kind() == Kind::kInt || a.kind() == Kind::kBool;
    bool b_int = b.kind() == Kind::kInt || b.kind() == Kind::kBool;
    if (a_seq && b_int) return repeat(ev, a, b.as_int());
    if (b_seq && a_int) return repeat(ev, b, a.as_int());
  }
  return unsupported_operands(op, a, b);
}

Result<bool> contains(const Value& container, const Value& item) {
  switch (container.kind()) {
    case Kind::kUndefined: return false;
    case Kind::kString:
      if (!item.is_string())
        return invalid_argument("'in <string>' requires string as left operand, not {}", type_name(item));
      return container.as_string().find(item.as_string()) != std::string::npos;
    case Kind::kList:
      for (const Value& x : container.as_list().items) {
        if (equals(x, item)) return true;
      }
      return false;
    case Kind::kDict: return container.as_dict().find(item) != nullptr;
    default: return invalid_argument("argument of type '{}' is not iterable", type_name(container));
  }
}

}  // namespace cai::jinja
