// Jinja evaluator: runs a parsed template against variables, with step/size/depth limits and Python semantics.
#pragma once

#include <ctime>
#include <string>
#include <unordered_map>
#include <vector>

#include "core/status.h"
#include "tokenizer/jinja/ast.h"
#include "tokenizer/jinja/value.h"

namespace cai::jinja {

struct Limits {
  std::size_t max_output_bytes = 32u << 20;  // rendered text and any single string value
  std::size_t max_items = 1u << 20;          // elements of one list/dict or characters iterated
  std::int64_t max_steps = 5'000'000;        // statements + expression nodes + loop iterations
  int max_call_depth = 50;                   // nested macro calls
};

class Evaluator {
 public:
  Evaluator(const Limits& limits, const std::tm& now) : limits_(limits), now_(now) {}

  void set_global(const std::string& name, Value v) { globals_[name] = std::move(v); }
  Result<std::string> render(const Template& tpl);

  // Used by the builtins.
  const Limits& limits() const { return limits_; }
  const std::tm& now() const { return now_; }
  Status step();
  Status check_size(std::size_t n_bytes) const;
  Status check_items(std::size_t n_items) const;
  Result<Value> call(const Value& callee, CallArgs& args);
  Result<Value> get_attr(const Value& obj, const std::string& name);
  Result<Value> get_item(const Value& obj, const Value& key);
  Result<std::vector<Value>> iterate(const Value& v);  // for-loop semantics: dict → keys, str → chars
  Result<Value> filter(const std::string& name, const Value& subject, CallArgs& args);
  Result<bool> test(const std::string& name, const Value& subject, CallArgs& args);

 private:
  enum class Flow { kNormal, kBreak, kContinue };
  struct Scope {
    std::unordered_map<std::string, Value> vars;
    bool macro_frame = false;  // lookups skip from here to the template's top level
  };

  Status exec_body(const Body& body);
  Status exec(const Stmt& s);
  Status exec_if(const Stmt& s);
  Status exec_for(const Stmt& s);
  Status exec_set(const Stmt& s);
  Status exec_filter_block(const Stmt& s);
  Result<Value> call_macro(const Stmt& macro, CallArgs& args);
  Result<std::string> capture(const Body& body);
  Status emit(std::string_view text);

  Result<Value> eval(const Expr& e);
  Result<Value> eval_inner(const Expr& e);
  Result<CallArgs> eval_args(const Expr& e, std::size_t first);
  Result<Value> eval_binary(const Expr& e);
  Result<Value> eval_compare(const Expr& e);
  Result<Value> eval_slice(const Expr& e);
  Value lookup(const std::string& name) const;
  void assign(const std::string& name, Value v) { scopes_.back().vars[name] = std::move(v); }

  Limits limits_;
  std::tm now_;
  std::unordered_map<std::string, Value> globals_;
  std::vector<Scope> scopes_;
  std::string out_;
  Flow flow_ = Flow::kNormal;
  std::int64_t n_steps_ = 0;
  int call_depth_ = 0;
};

// Arithmetic and membership with Python semantics (used by the evaluator and filters).
Result<Value> binary_op(Evaluator& ev, const std::string& op, const Value& a, const Value& b);
Result<bool> contains(const Value& container, const Value& item);
Status undefined_error(const Value& v);  // the error for using an undefined value

}  // namespace cai::jinja
