// Jinja tests (`x is defined`, `x is string`, ...) and the argument reader shared by all builtins.
#include <algorithm>
#include <cstring>

#include "tokenizer/jinja/builtins.h"
#include "tokenizer/jinja/evaluator.h"

namespace cai::jinja {

Result<Value> ArgReader::get(std::size_t pos, const char* name, Value fallback) const {
  if (pos < args.positional.size()) {
    for (const auto& [n, v] : args.named) {
      if (n == name) return invalid_argument("{}() got multiple values for argument '{}'", func, name);
    }
    return args.positional[pos];
  }
  for (const auto& [n, v] : args.named) {
    if (n == name) return v;
  }
  return fallback;
}

Status ArgReader::check_max(std::size_t n_positional, std::initializer_list<const char*> names) const {
  if (args.positional.size() > n_positional) {
    return invalid_argument("{}() takes at most {} arguments ({} given)", func, n_positional, args.positional.size());
  }
  for (const auto& named : args.named) {
    bool known = std::any_of(names.begin(), names.end(), [&](const char* k) { return named.first == k; });
    if (!known) return invalid_argument("{}() got an unexpected keyword argument '{}'", func, named.first);
  }
  return Status();
}

namespace {

using TestFn = Result<bool> (*)(Evaluator&, const Value&, const ArgReader&);

Result<bool> need_int(const Value& v, const char* test) {
  if (v.kind() != Kind::kInt && v.kind() != Kind::kBool) {
    return invalid_argument("test '{}' needs an integer, got '{}'", test, type_name(v));
  }
  return true;
}

Result<bool> compare_test(const Value& v, const ArgReader& r, int want_lo, int want_hi) {
  CAI_ASSIGN_OR_RETURN(Value other, r.get(0, "b"));
  if (v.is_undefined()) return undefined_error(v);
  if (other.is_undefined()) return undefined_error(other);
  CAI_ASSIGN_OR_RETURN(int c, compare(v, other));
  c = (c > 0) - (c < 0);
  return c >= want_lo && c <= want_hi;
}

bool has_case(const std::string& s, bool upper) {
  bool any_cased = false;
  for (char c : s) {
    if (c >= 'a' && c <= 'z') {
      if (upper) return false;
      any_cased = true;
    } else if (c >= 'A' && c <= 'Z') {
      if (!upper) return false;
      any_cased = true;
    }
  }
  return any_cased;
}

struct TestEntry {
  const char* name;
  TestFn fn;
};

const TestEntry kTests[] = {
    {"defined", [](Evaluator&, const Value& v, const ArgReader&) -> Result<bool> { return !v.is_undefined(); }},
    {"undefined", [](Evaluator&, const Value& v, const ArgReader&) -> Result<bool> { return v.is_undefined(); }},
    {"none", [](Evaluator&, const Value& v, const ArgReader&) -> Result<bool> { return v.is_none(); }},
    {"boolean", [](Evaluator&, const Value& v, const ArgReader&) -> Result<bool> { return v.kind() == Kind::kBool; }},
    {"true",
     [](Evaluator&, const Value& v, const ArgReader&) -> Result<bool> {
       return v.kind() == Kind::kBool && v.as_bool();
     }},
    {"false",
     [](Evaluator&, const Value& v, const ArgReader&) -> Result<bool> {
       return v.kind() == Kind::kBool && !v.as_bool();
     }},
    {"integer", [](Evaluator&, const Value& v, const ArgReader&) -> Result<bool> { return v.kind() == Kind::kInt; }},
    {"float", [](Evaluator&, const Value& v, const ArgReader&) -> Result<bool> { return v.kind() == Kind::kFloat; }},
    {"number", [](Evaluator&, const Value& v, const ArgReader&) -> Result<bool> { return v.is_number(); }},
    {"string", [](Evaluator&, const Value& v, const ArgReader&) -> Result<bool> { return v.is_string(); }},
    {"mapping", [](Evaluator&, const Value& v, const ArgReader&) -> Result<bool> { return v.kind() == Kind::kDict; }},
    {"iterable",
     [](Evaluator&, const Value& v, const ArgReader&) -> Result<bool> {
       return v.is_undefined() || v.is_string() || v.kind() == Kind::kList || v.kind() == Kind::kDict;
     }},
    {"sequence",
     [](Evaluator&, const Value& v, const ArgReader&) -> Result<bool> {
       return v.is_undefined() || v.is_string() || v.kind() == Kind::kList || v.kind() == Kind::kDict;
     }},
    {"callable",
     [](Evaluator&, const Value& v, const ArgReader&) -> Result<bool> { return v.kind() == Kind::kCallable; }},
    {"odd",
     [](Evaluator&, const Value& v, const ArgReader&) -> Result<bool> {
       CAI_TRY(need_int(v, "odd").status());
       return v.as_int() % 2 != 0;
     }},
    {"even",
     [](Evaluator&, const Value& v, const ArgReader&) -> Result<bool> {
       CAI_TRY(need_int(v, "even").status());
       return v.as_int() % 2 == 0;
     }},
    {"divisibleby",
     [](Evaluator&, const Value& v, const ArgReader& r) -> Result<bool> {
       CAI_ASSIGN_OR_RETURN(Value n, r.get(0, "num"));
       CAI_TRY(need_int(v, "divisibleby").status());
       CAI_TRY(need_int(n, "divisibleby").status());
       if (n.as_int() == 0) return invalid_argument("integer division or modulo by zero");
       return n.as_int() == -1 || v.as_int() % n.as_int() == 0;
     }},
    {"eq",
     [](Evaluator&, const Value& v, const ArgReader& r) -> Result<bool> {
       CAI_ASSIGN_OR_RETURN(Value other, r.get(0, "other"));
       return equals(v, other);
     }},
    {"ne",
     [](Evaluator&, const Value& v, const ArgReader& r) -> Result<bool> {
       CAI_ASSIGN_OR_RETURN(Value other, r.get(0, "other"));
       return !equals(v, other);
     }},
    {"lt", [](Evaluator&, const Value& v, const ArgReader& r) { return compare_test(v, r, -1, -1); }},
    {"le", [](Evaluator&, const Value& v, const ArgReader& r) { return compare_test(v, r, -1, 0); }},
    {"gt", [](Evaluator&, const Value& v, const ArgReader& r) { return compare_test(v, r, 1, 1); }},
    {"ge", [](Evaluator&, const Value& v, const ArgReader& r) { return compare_test(v, r, 0, 1); }},
    {"in",
     [](Evaluator&, const Value& v, const ArgReader& r) -> Result<bool> {
       CAI_ASSIGN_OR_RETURN(Value seq, r.get(0, "seq"));
       return contains(seq, v);
     }},
    {"sameas",
     [](Evaluator&, const Value& v, const ArgReader& r) -> Result<bool> {
       CAI_ASSIGN_OR_RETURN(Value other, r.get(0, "other"));
       if (v.kind() != other.kind()) return false;
       bool scalar = v.is_none() || v.kind() == Kind::kBool || v.is_undefined();
       return scalar ? equals(v, other) : v.same_object(other);
     }},
    {"lower",
     [](Evaluator&, const Value& v, const ArgReader&) -> Result<bool> {
       return v.is_string() && has_case(v.as_string(), false);
     }},
    {"upper",
     [](Evaluator&, const Value& v, const ArgReader&) -> Result<bool> {
       return v.is_string() && has_case(v.as_string(), true);
     }},
    {"escaped", [](Evaluator&, const Value&, const ArgReader&) -> Result<bool> { return false; }},
};

const char* canonical_test(std::string_view name) {
  static const std::pair<const char*, const char*> kAliases[] = {{"equalto", "eq"},     {"==", "eq"}, {"!=", "ne"},
                                                                 {"lessthan", "lt"},    {"<", "lt"},  {"<=", "le"},
                                                                 {"greaterthan", "gt"}, {">", "gt"},  {">=", "ge"}};
  for (const auto& [alias, canon] : kAliases) {
    if (name == alias) return canon;
  }
  for (const TestEntry& t : kTests) {
    if (name == t.name) return t.name;
  }
  return nullptr;
}

}  // namespace

bool has_test(std::string_view name) { return canonical_test(name) != nullptr; }

Result<bool> apply_test(Evaluator& ev, const std::string& name, const Value& subject, CallArgs& args) {
  const char* canon = canonical_test(name);
  if (!canon) return invalid_argument("no test named '{}'", name);
  for (const TestEntry& t : kTests) {
    if (std::strcmp(t.name, canon) == 0) return t.fn(ev, subject, ArgReader{canon, args});
  }
  return internal_error("test table out of sync for '{}'", name);
}

}  // namespace cai::jinja
