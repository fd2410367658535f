// Runtime values of the Jinja interpreter: Python-like scalars, immutable lists/dicts, namespaces, callables.
#pragma once

#include <nlohmann/json.hpp>

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <unordered_map>
#include <utility>
#include <variant>
#include <vector>

#include "core/status.h"

namespace cai::jinja {

class Value;
class Evaluator;

inline constexpr int kMaxValueDepth = 200;  // nesting of lists/dicts; bounds every recursive walk

struct ValueList;
class ValueDict;
struct Namespace;
struct CallArgs;
struct Callable;
using NativeFn = std::function<Result<Value>(Evaluator&, CallArgs&)>;

enum class Kind { kUndefined, kNone, kBool, kInt, kFloat, kString, kList, kDict, kNamespace, kCallable };

class Value {
 public:
  Value() = default;                                  // undefined
  Value(bool b) : v_(b) {}                            // NOLINT
  Value(std::int64_t i) : v_(i) {}                    // NOLINT
  Value(int i) : v_(static_cast<std::int64_t>(i)) {}  // NOLINT
  Value(double d) : v_(d) {}                          // NOLINT
  Value(std::string s) : v_(std::move(s)) {}          // NOLINT
  Value(const char* s) : v_(std::string(s)) {}        // NOLINT
  static Value undefined(std::string hint);           // hint: the message an access on it reports
  static Value none();
  static Value list(std::vector<Value> items, bool is_tuple = false);
  static Value dict(ValueDict d);
  static Value make_namespace(ValueDict attrs);
  static Value callable(std::string name, NativeFn fn);

  Kind kind() const { return static_cast<Kind>(v_.index()); }
  bool is_undefined() const { return kind() == Kind::kUndefined; }
  bool is_none() const { return kind() == Kind::kNone; }
  bool is_string() const { return kind() == Kind::kString; }
  bool is_number() const { return kind() == Kind::kInt || kind() == Kind::kFloat || kind() == Kind::kBool; }
  bool as_bool() const { return std::get<bool>(v_); }
  std::int64_t as_int() const;  // bool or int
  double as_float() const;      // bool, int or float
  const std::string& as_string() const { return std::get<std::string>(v_); }
  const ValueList& as_list() const { return *std::get<ListPtr>(v_).list; }
  const ValueDict& as_dict() const { return *std::get<DictPtr>(v_).dict; }
  Namespace& as_namespace() const { return *std::get<std::shared_ptr<Namespace>>(v_); }
  const Callable& as_callable() const { return *std::get<std::shared_ptr<const Callable>>(v_); }
  const std::string& undefined_hint() const { return std::get<Undef>(v_).hint; }
  int depth() const;                       // 0 for scalars, 1 + deepest element for lists/dicts
  bool same_object(const Value& o) const;  // Python `is` for namespaces/callables

 private:
  struct Undef {
    std::string hint;
  };
  struct ListPtr {
    std::shared_ptr<const ValueList> list;
    int depth;
  };
  struct DictPtr {
    std::shared_ptr<const ValueDict> dict;
    int depth;
  };
  std::variant<Undef, std::nullptr_t, bool, std::int64_t, double, std::string, ListPtr, DictPtr,
               std::shared_ptr<Namespace>, std::shared_ptr<const Callable>>
      v_;
};

struct ValueList {
  std::vector<Value> items;
  bool is_tuple = false;  // only changes how it prints: (1, 2)
};

// Insertion-ordered dict keyed by hashable values (str, int, float, bool, None).
class ValueDict {
 public:
  const Value* find(const Value& key) const;
  bool set(const Value& key, Value value);  // false if the key is unhashable
  const std::vector<std::pair<Value, Value>>& items() const { return items_; }
  std::size_t size() const { return items_.size(); }

 private:
  std::vector<std::pair<Value, Value>> items_;
  std::unordered_map<std::string, std::size_t> index_;
};

struct Namespace {
  ValueDict attrs;
};

struct CallArgs {
  std::vector<Value> positional;
  std::vector<std::pair<std::string, Value>> named;
};
struct Callable {
  std::string name;
  NativeFn fn;
};

bool truthy(const Value& v);
// Python str(): None, True, 1.0, ['a', 1], {'k': 'v'}. Containers stop printing once past `limit` bytes,
// so a caller that rejects results over its limit never builds a huge string first.
std::string to_str(const Value& v, std::size_t limit = SIZE_MAX);
std::string repr(const Value& v, std::size_t limit = SIZE_MAX);
bool equals(const Value& a, const Value& b);
Result<int> compare(const Value& a, const Value& b);  // <0, 0, >0; error where Python raises TypeError
std::string type_name(const Value& v);                // "str object", "dict object", ... for messages
std::optional<std::string> hash_key(const Value& v);  // nullopt = unhashable

Result<Value> from_json(const nlohmann::json& j);
Result<Value> from_json(const nlohmann::ordered_json& j);
// json.dumps(v, ensure_ascii=False, indent=indent, separators=..., sort_keys=...); indent < 0 = none.
struct JsonStyle {
  std::size_t max_bytes = SIZE_MAX;  // longer output is an error
  int indent = -1;
  std::string item_sep;  // "" = Python's default for the indent
  std::string key_sep = ": ";
  bool sort_keys = false;
};
Result<std::string> to_json(const Value& v, const JsonStyle& style);

}  // namespace cai::jinja
