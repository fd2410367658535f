// Built-in filters, tests, globals and str/dict methods of the Jinja interpreter (names as in jinja2).
#pragma once

#include <optional>
#include <string>
#include <string_view>

#include "core/status.h"
#include "tokenizer/jinja/value.h"

namespace cai::jinja {

bool has_filter(std::string_view name);
bool has_test(std::string_view name);
Result<Value> apply_filter(Evaluator& ev, const std::string& name, const Value& subject, CallArgs& args);
Result<bool> apply_test(Evaluator& ev, const std::string& name, const Value& subject, CallArgs& args);

// `self.name` as a bound method (str and dict methods), or nullopt when the type has no such method.
std::optional<Value> bound_method(const Value& self, const std::string& name);
// Installs namespace, range, dict, raise_exception and strftime_now.
void install_globals(Evaluator& ev);

// Argument binding shared by the builtins: positional index `pos` or keyword `name`.
struct ArgReader {
  const char* func;
  CallArgs& args;
  Result<Value> get(std::size_t pos, const char* name, Value fallback = Value()) const;
  Status check_max(std::size_t n_positional, std::initializer_list<const char*> names) const;
};

}  // namespace cai::jinja
