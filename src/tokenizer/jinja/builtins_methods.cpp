// str/dict methods callable from templates (`s.startswith(...)`, `d.items()`) and the global functions.
#include <algorithm>
#include <cstring>
#include <ctime>

#include "tokenizer/jinja/builtins.h"
#include "tokenizer/jinja/evaluator.h"
#include "tokenizer/jinja/pystr.h"

namespace cai::jinja {
namespace {

using MethodFn = Result<Value> (*)(Evaluator&, const Value& self, const ArgReader&);

Result<std::string> string_arg(const ArgReader& r, std::size_t pos, const char* name) {
  CAI_ASSIGN_OR_RETURN(Value v, r.get(pos, name));
  if (!v.is_string()) return invalid_argument("{}() argument '{}' must be str, not {}", r.func, name, type_name(v));
  return v.as_string();
}

Result<std::optional<std::string>> chars_arg(const ArgReader& r) {
  CAI_ASSIGN_OR_RETURN(Value v, r.get(0, "chars", Value::none()));
  if (v.is_none()) return std::optional<std::string>();
  if (!v.is_string()) return invalid_argument("{}() argument must be str or None", r.func);
  return std::optional<std::string>(v.as_string());
}

Result<std::int64_t> int_arg(const ArgReader& r, std::size_t pos, const char* name, std::int64_t fallback) {
  CAI_ASSIGN_OR_RETURN(Value v, r.get(pos, name, fallback));
  if (v.kind() != Kind::kInt && v.kind() != Kind::kBool)
    return invalid_argument("{}() argument '{}' must be int", r.func, name);
  return v.as_int();
}

// startswith/endswith take a str or a tuple of str.
Result<Value> affix_test(const Value& self, const ArgReader& r, bool prefix) {
  CAI_ASSIGN_OR_RETURN(Value arg, r.get(0, "prefix"));
  std::vector<Value> options = arg.kind() == Kind::kList ? arg.as_list().items : std::vector<Value>{arg};
  const std::string& s = self.as_string();
  for (const Value& o : options) {
    if (!o.is_string()) return invalid_argument("{}() argument must be str or a tuple of str", r.func);
    const std::string& a = o.as_string();
    if (a.size() > s.size()) continue;
    if (prefix ? s.compare(0, a.size(), a) == 0 : s.compare(s.size() - a.size(), a.size(), a) == 0) return Value(true);
  }
  return Value(false);
}

Result<Value> split_method(Evaluator& ev, const Value& self, const ArgReader& r, bool from_right) {
  CAI_ASSIGN_OR_RETURN(Value sep, r.get(0, "sep", Value::none()));
  CAI_ASSIGN_OR_RETURN(std::int64_t maxsplit, int_arg(r, 1, "maxsplit", -1));
  if (!sep.is_none() && !sep.is_string()) return invalid_argument("{}() separator must be str or None", r.func);
  if (sep.is_string() && sep.as_string().empty()) return invalid_argument("empty separator");
  std::optional<std::string> sep_s = sep.is_string() ? std::optional<std::string>(sep.as_string()) : std::nullopt;
  std::vector<std::string> parts;
  if (from_right && maxsplit >= 0 && sep_s) {
    std::string s = self.as_string();
    while (static_cast<std::int64_t>(parts.size()) < maxsplit) {
      std::size_t hit = s.rfind(*sep_s);
      if (hit == std::string::npos) break;
      parts.push_back(s.substr(hit + sep_s->size()));
      s.resize(hit);
    }
    parts.push_back(s);
    std::reverse(parts.begin(), parts.end());
  } else if (from_right && maxsplit >= 0) {
    return invalid_argument("rsplit() with maxsplit needs a separator");
  } else {
    parts = py_split(self.as_string(), sep_s, maxsplit);
  }
  CAI_TRY(ev.check_items(parts.size()));
  std::vector<Value> out(parts.begin(), parts.end());
  return Value::list(std::move(out));
}

Result<Value> strip_method(const Value& self, const ArgReader& r, StripSide side) {
  CAI_TRY(r.check_max(1, {}));
  CAI_ASSIGN_OR_RETURN(std::optional<std::string> chars, chars_arg(r));
  return Value(py_strip(self.as_string(), chars, side));
}

Result<Value> find_method(const Value& self, const ArgReader& r) {
  CAI_ASSIGN_OR_RETURN(std::string sub, string_arg(r, 0, "sub"));
  std::size_t hit = self.as_string().find(sub);
  if (hit == std::string::npos) return Value(-1);
  return Value(static_cast<std::int64_t>(utf8_length(std::string_view(self.as_string()).substr(0, hit))));
}

Result<Value> count_method(const Value& self, const ArgReader& r) {
  CAI_ASSIGN_OR_RETURN(std::string sub, string_arg(r, 0, "sub"));
  const std::string& s = self.as_string();
  if (sub.empty()) return Value(static_cast<std::int64_t>(utf8_length(s) + 1));
  std::int64_t n = 0;
  for (std::size_t p = s.find(sub); p != std::string::npos; p = s.find(sub, p + sub.size())) ++n;
  return Value(n);
}

Result<Value> join_method(Evaluator& ev, const Value& self, const ArgReader& r) {
  CAI_ASSIGN_OR_RETURN(Value seq, r.get(0, "iterable"));
  CAI_ASSIGN_OR_RETURN(std::vector<Value> items, ev.iterate(seq));
  std::string out;
  for (std::size_t i = 0; i < items.size(); ++i) {
    if (!items[i].is_string())
      return invalid_argument("sequence item {}: expected str instance, {} found", i, type_name(items[i]));
    if (i) out += self.as_string();
    out += items[i].as_string();
    CAI_TRY(ev.check_size(out.size()));
  }
  return Value(std::move(out));
}

Result<Value> char_class(const Value& self, int (*pred)(int)) {
  const std::string& s = self.as_string();
  if (s.empty()) return Value(false);
  return Value(std::all_of(s.begin(), s.end(), [&](char c) { return pred(static_cast<unsigned char>(c)) != 0; }));
}

struct Method {
  const char* name;
  MethodFn fn;
};

const Method kStringMethods[] = {
    {"startswith", [](Evaluator&, const Value& s, const ArgReader& r) { return affix_test(s, r, true); }},
    {"endswith", [](Evaluator&, const Value& s, const ArgReader& r) { return affix_test(s, r, false); }},
    {"split", [](Evaluator& ev, const Value& s, const ArgReader& r) { return split_method(ev, s, r, false); }},
    {"rsplit", [](Evaluator& ev, const Value& s, const ArgReader& r) { return split_method(ev, s, r, true); }},
    {"splitlines",
     [](Evaluator&, const Value& s, const ArgReader&) -> Result<Value> {
       std::vector<std::string> lines = py_splitlines(s.as_string());
       return Value::list(std::vector<Value>(lines.begin(), lines.end()));
     }},
    {"strip", [](Evaluator&, const Value& s, const ArgReader& r) { return strip_method(s, r, StripSide::kBoth); }},
    {"lstrip", [](Evaluator&, const Value& s, const ArgReader& r) { return strip_method(s, r, StripSide::kLeft); }},
    {"rstrip", [](Evaluator&, const Value& s, const ArgReader& r) { return strip_method(s, r, StripSide::kRight); }},
    {"replace",
     [](Evaluator& ev, const Value& s, const ArgReader& r) -> Result<Value> {
       CAI_ASSIGN_OR_RETURN(std::string old_s, string_arg(r, 0, "old"));
       CAI_ASSIGN_OR_RETURN(std::string new_s, string_arg(r, 1, "new"));
       CAI_ASSIGN_OR_RETURN(std::int64_t count, int_arg(r, 2, "count", -1));
       std::optional<std::string> out = py_replace(s.as_string(), old_s, new_s, count, ev.limits().max_output_bytes);
       if (!out) return invalid_argument("replace() result exceeds {} bytes", ev.limits().max_output_bytes);
       return Value(std::move(*out));
     }},
    {"upper",
     [](Evaluator&, const Value& s, const ArgReader&) -> Result<Value> { return Value(py_upper(s.as_string())); }},
    {"lower",
     [](Evaluator&, const Value& s, const ArgReader&) -> Result<Value> { return Value(py_lower(s.as_string())); }},
    {"title",
     [](Evaluator&, const Value& s, const ArgReader&) -> Result<Value> { return Value(py_title(s.as_string())); }},
    {"capitalize",
     [](Evaluator&, const Value& s, const ArgReader&) -> Result<Value> { return Value(py_capitalize(s.as_string())); }},
    {"find", [](Evaluator&, const Value& s, const ArgReader& r) { return find_method(s, r); }},
    {"count", [](Evaluator&, const Value& s, const ArgReader& r) { return count_method(s, r); }},
    {"join", join_method},
    {"isdigit", [](Evaluator&, const Value& s, const ArgReader&) { return char_class(s, isdigit); }},
    {"isalpha", [](Evaluator&, const Value& s, const ArgReader&) { return char_class(s, isalpha); }},
    {"isalnum", [](Evaluator&, const Value& s, const ArgReader&) { return char_class(s, isalnum); }},
    {"isspace", [](Evaluator&, const Value& s, const ArgReader&) { return char_class(s, isspace); }},
};

Result<Value> dict_view(const Value& self, int which) {  // 0 items, 1 keys, 2 values
  std::vector<Value> out;
  for (const auto& [k, x] : self.as_dict().items()) {
    out.push_back(which == 0 ? Value::list({k, x}, true) : which == 1 ? k : x);
  }
  return Value::list(std::move(out));
}

const Method kDictMethods[] = {
    {"items", [](Evaluator&, const Value& d, const ArgReader&) { return dict_view(d, 0); }},
    {"keys", [](Evaluator&, const Value& d, const ArgReader&) { return dict_view(d, 1); }},
    {"values", [](Evaluator&, const Value& d, const ArgReader&) { return dict_view(d, 2); }},
    {"get",
     [](Evaluator&, const Value& d, const ArgReader& r) -> Result<Value> {
       CAI_ASSIGN_OR_RETURN(Value key, r.get(0, "key"));
       CAI_ASSIGN_OR_RETURN(Value fallback, r.get(1, "default", Value::none()));
       const Value* v = d.as_dict().find(key);
       return v ? *v : fallback;
     }},
};

template <std::size_t N>
std::optional<Value> bind(const Method (&table)[N], const Value& self, const std::string& name) {
  for (const Method& m : table) {
    if (name != m.name) continue;
    MethodFn fn = m.fn;
    const char* func = m.name;
    return Value::callable(name, [self, fn, func](Evaluator& ev, CallArgs& args) {
      return fn(ev, self, ArgReader{func, args});
    });
  }
  return std::nullopt;
}

Result<ValueDict> kwargs_dict(const ArgReader& r) {
  ValueDict d;
  if (!r.args.positional.empty()) {
    const Value& init = r.args.positional[0];
    if (r.args.positional.size() > 1 || init.kind() != Kind::kDict) {
      return invalid_argument("{}() takes at most one mapping argument", r.func);
    }
    for (const auto& [k, v] : init.as_dict().items()) d.set(k, v);
  }
  for (const auto& [k, v] : r.args.named) d.set(Value(k), v);
  return d;
}

Result<Value> range_fn(Evaluator& ev, CallArgs& args) {
  ArgReader r{"range", args};
  CAI_TRY(r.check_max(3, {}));
  if (args.positional.empty()) return invalid_argument("range expected at least 1 argument, got 0");
  std::int64_t bounds[3] = {0, 0, 1};
  for (std::size_t i = 0; i < args.positional.size(); ++i) {
    CAI_ASSIGN_OR_RETURN(bounds[i], int_arg(r, i, "arg", 0));
  }
  if (args.positional.size() == 1) std::swap(bounds[0], bounds[1]);
  std::int64_t start = bounds[0], stop = bounds[1], step = bounds[2];
  if (step == 0) return invalid_argument("range() arg 3 must not be zero");
  double n =
      std::max(0.0, std::ceil((static_cast<double>(stop) - static_cast<double>(start)) / static_cast<double>(step)));
  constexpr double kMaxRange = 100000;  // jinja2's sandbox limit
  if (n > kMaxRange) return invalid_argument("range too big; the sandbox allows at most {} items", kMaxRange);
  std::vector<Value> out;
  for (std::int64_t i = start; step > 0 ? i < stop : i > stop; i += step) out.emplace_back(i);
  CAI_TRY(ev.step());
  return Value::list(std::move(out));
}

Result<Value> strftime_fn(Evaluator& ev, CallArgs& args) {
  ArgReader r{"strftime_now", args};
  CAI_ASSIGN_OR_RETURN(std::string fmt, string_arg(r, 0, "format"));
  if (fmt.size() > 256) return invalid_argument("strftime_now() format longer than 256 bytes");
  char buf[2048];
  std::size_t n = std::strftime(buf, sizeof(buf), fmt.c_str(), &ev.now());
  return Value(std::string(buf, n));
}

}  // namespace

std::optional<Value> bound_method(const Value& self, const std::string& name) {
  if (self.is_string()) return bind(kStringMethods, self, name);
  if (self.kind() == Kind::kDict) return bind(kDictMethods, self, name);
  return std::nullopt;
}

void install_globals(Evaluator& ev) {
  ev.set_global("namespace", Value::callable("namespace", [](Evaluator&, CallArgs& args) -> Result<Value> {
                  CAI_ASSIGN_OR_RETURN(ValueDict d, kwargs_dict(ArgReader{"namespace", args}));
                  return Value::make_namespace(std::move(d));
                }));
  ev.set_global("dict", Value::callable("dict", [](Evaluator&, CallArgs& args) -> Result<Value> {
                  CAI_ASSIGN_OR_RETURN(ValueDict d, kwargs_dict(ArgReader{"dict", args}));
                  return Value::dict(std::move(d));
                }));
  ev.set_global("range", Value::callable("range", range_fn));
  ev.set_global("raise_exception", Value::callable("raise_exception", [](Evaluator&, CallArgs& args) -> Result<Value> {
                  std::string msg = args.positional.empty() ? std::string("raise_exception() called")
                                                            : to_str(args.positional[0], 4096).substr(0, 4096);
                  return invalid_argument("{}", msg);
                }));
  ev.set_global("strftime_now", Value::callable("strftime_now", strftime_fn));
}

}  // namespace cai::jinja
