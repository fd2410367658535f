// Jinja evaluator: statements, scopes, loops and macros; expression dispatch and error locations.
#include "tokenizer/jinja/evaluator.h"

#include <algorithm>

namespace cai::jinja {
namespace {

constexpr std::string_view kErrorPrefix = "chat template error";

Status at_line(const Status& st, int line) {
  if (st.message().rfind(kErrorPrefix, 0) == 0) return st;
  return Status(st.code(), fmt::format("{} at line {}: {}", kErrorPrefix, line, st.message()));
}

}  // namespace

Status undefined_error(const Value& v) {
  const std::string& hint = v.undefined_hint();
  return invalid_argument("{}", hint.empty() ? "value is undefined" : hint);
}

Status Evaluator::step() {
  if (++n_steps_ > limits_.max_steps)
    return invalid_argument("template exceeded {} evaluation steps", limits_.max_steps);
  return Status();
}

Status Evaluator::check_size(std::size_t n_bytes) const {
  if (n_bytes > limits_.max_output_bytes) return invalid_argument("string exceeds {} bytes", limits_.max_output_bytes);
  return Status();
}

Status Evaluator::check_items(std::size_t n_items) const {
  if (n_items > limits_.max_items) return invalid_argument("sequence exceeds {} items", limits_.max_items);
  return Status();
}

Status Evaluator::emit(std::string_view text) {
  if (out_.size() + text.size() > limits_.max_output_bytes) {
    return invalid_argument("output exceeds {} bytes", limits_.max_output_bytes);
  }
  out_ += text;
  return Status();
}

Result<std::string> Evaluator::render(const Template& tpl) {
  scopes_.clear();
  scopes_.emplace_back();
  out_.clear();
  flow_ = Flow::kNormal;
  n_steps_ = 0;
  CAI_TRY(exec_body(tpl.body));
  return std::move(out_);
}

Value Evaluator::lookup(const std::string& name) const {
  for (std::size_t i = scopes_.size(); i-- > 0;) {
    auto it = scopes_[i].vars.find(name);
    if (it != scopes_[i].vars.end()) return it->second;
    if (scopes_[i].macro_frame && i > 0) i = 1;  // continue at the top level (index 0)
  }
  auto g = globals_.find(name);
  if (g != globals_.end()) return g->second;
  return Value::undefined(fmt::format("'{}' is undefined", name));
}

Status Evaluator::exec_body(const Body& body) {
  for (const StmtPtr& s : body) {
    CAI_TRY(exec(*s));
    if (flow_ != Flow::kNormal) break;
  }
  return Status();
}

Status Evaluator::exec(const Stmt& s) {
  Status st = step();
  if (st.ok()) {
    switch (s.kind) {
      case StmtKind::kText: st = emit(s.text); break;
      case StmtKind::kOutput: {
        Result<Value> v = eval(*s.expr);
        st = v.ok() ? emit(to_str(*v, limits_.max_output_bytes)) : v.status();
        break;
      }
      case StmtKind::kIf: st = exec_if(s); break;
      case StmtKind::kFor: st = exec_for(s); break;
      case StmtKind::kSet: st = exec_set(s); break;
      case StmtKind::kMacro: {
        const Stmt* macro = &s;
        assign(s.text,
               Value::callable(s.text, [macro](Evaluator& ev, CallArgs& args) { return ev.call_macro(*macro, args); }));
        break;
      }
      case StmtKind::kFilterBlock: st = exec_filter_block(s); break;
      case StmtKind::kGroup: st = exec_body(s.bodies[0]); break;
      case StmtKind::kBreak: flow_ = Flow::kBreak; break;
      case StmtKind::kContinue: flow_ = Flow::kContinue; break;
    }
  }
  return st.ok() ? st : at_line(st, s.line);
}

Status Evaluator::exec_if(const Stmt& s) {
  for (std::size_t i = 0; i < s.conds.size(); ++i) {
    CAI_ASSIGN_OR_RETURN(Value c, eval(*s.conds[i]));
    if (truthy(c)) return exec_body(s.bodies[i]);
  }
  if (s.bodies.size() > s.conds.size()) return exec_body(s.bodies.back());
  return Status();
}

Status Evaluator::exec_for(const Stmt& s) {
  CAI_ASSIGN_OR_RETURN(Value iterable, eval(*s.expr));
  CAI_ASSIGN_OR_RETURN(std::vector<Value> items, iterate(iterable));
  auto bind = [&](Scope& scope, const Value& item) -> Status {
    if (s.targets.size() == 1) {
      scope.vars[s.targets[0]] = item;
      return Status();
    }
    if (item.kind() != Kind::kList || item.as_list().items.size() != s.targets.size()) {
      return invalid_argument("cannot unpack {} into {} loop variables", type_name(item), s.targets.size());
    }
    for (std::size_t k = 0; k < s.targets.size(); ++k) scope.vars[s.targets[k]] = item.as_list().items[k];
    return Status();
  };
  if (s.cond) {  // `for x in xs if cond`: filter first, so loop.length counts what is kept
    std::vector<Value> kept;
    for (Value& item : items) {
      scopes_.emplace_back();
      Status st = bind(scopes_.back(), item);
      Result<Value> keep = st.ok() ? eval(*s.cond) : Result<Value>(st);
      scopes_.pop_back();
      if (!keep.ok()) return keep.status();
      if (truthy(*keep)) kept.push_back(std::move(item));
    }
    items = std::move(kept);
  }
  const std::size_t n = items.size();
  for (std::size_t i = 0; i < n; ++i) {
    CAI_TRY(step());
    ValueDict loop;
    loop.set("index0", static_cast<std::int64_t>(i));
    loop.set("index", static_cast<std::int64_t>(i + 1));
    loop.set("revindex0", static_cast<std::int64_t>(n - i - 1));
    loop.set("revindex", static_cast<std::int64_t>(n - i));
    loop.set("first", i == 0);
    loop.set("last", i + 1 == n);
    loop.set("length", static_cast<std::int64_t>(n));
    loop.set("depth", 1);
    loop.set("depth0", 0);
    loop.set("previtem", i > 0 ? items[i - 1] : Value::undefined("there is no previous item"));
    loop.set("nextitem", i + 1 < n ? items[i + 1] : Value::undefined("there is no next item"));
    scopes_.emplace_back();
    scopes_.back().vars["loop"] = Value::dict(std::move(loop));
    Status st = bind(scopes_.back(), items[i]);
    if (st.ok()) st = exec_body(s.bodies[0]);
    scopes_.pop_back();
    CAI_TRY(st);
    Flow f = flow_;
    flow_ = Flow::kNormal;
    if (f == Flow::kBreak) break;
  }
  if (n == 0 && s.bodies.size() > 1) return exec_body(s.bodies[1]);
  return Status();
}

Status Evaluator::exec_set(const Stmt& s) {
  Value v;
  if (s.expr) {
    CAI_ASSIGN_OR_RETURN(v, eval(*s.expr));
  } else {
    CAI_ASSIGN_OR_RETURN(std::string text, capture(s.bodies[0]));
    v = Value(std::move(text));
  }
  if (!s.attr.empty()) {
    Value ns = lookup(s.targets[0]);
    if (ns.kind() != Kind::kNamespace) {
      return invalid_argument("cannot assign attribute on non-namespace object '{}'", s.targets[0]);
    }
    ns.as_namespace().attrs.set(Value(s.attr), std::move(v));
    return Status();
  }
  if (s.targets.size() == 1) {
    assign(s.targets[0], std::move(v));
    return Status();
  }
  if (v.kind() != Kind::kList || v.as_list().items.size() != s.targets.size()) {
    return invalid_argument("cannot unpack {} into {} names", type_name(v), s.targets.size());
  }
  for (std::size_t k = 0; k < s.targets.size(); ++k) assign(s.targets[k], v.as_list().items[k]);
  return Status();
}

Status Evaluator::exec_filter_block(const Stmt& s) {
  CAI_ASSIGN_OR_RETURN(std::string text, capture(s.bodies[0]));
  // Walk the chain from the innermost (null subject) filter outwards.
  std::vector<const Expr*> chain;
  for (const Expr* f = s.expr.get(); f; f = f->args[0].get()) chain.push_back(f);
  Value v(std::move(text));
  for (auto it = chain.rbegin(); it != chain.rend(); ++it) {
    CAI_ASSIGN_OR_RETURN(CallArgs args, eval_args(**it, 1));
    CAI_ASSIGN_OR_RETURN(v, filter((*it)->name, v, args));
  }
  return emit(to_str(v, limits_.max_output_bytes));
}

// Runs `body` with its output captured instead of emitted.
Result<std::string> Evaluator::capture(const Body& body) {
  std::string saved = std::move(out_);
  out_.clear();
  Status st = exec_body(body);
  std::string text = std::move(out_);
  out_ = std::move(saved);
  if (!st.ok()) return st;
  return text;
}

Result<Value> Evaluator::call_macro(const Stmt& m, CallArgs& args) {
  if (call_depth_ >= limits_.max_call_depth)
    return invalid_argument("macros nested deeper than {}", limits_.max_call_depth);
  if (args.positional.size() > m.targets.size()) {
    return invalid_argument("macro '{}' takes {} arguments, got {}", m.text, m.targets.size(), args.positional.size());
  }
  Scope frame;
  frame.macro_frame = true;
  for (std::size_t i = 0; i < args.positional.size(); ++i) frame.vars[m.targets[i]] = args.positional[i];
  for (auto& [name, v] : args.named) {
    auto it = std::find(m.targets.begin(), m.targets.end(), name);
    if (it == m.targets.end()) return invalid_argument("macro '{}' takes no keyword argument '{}'", m.text, name);
    frame.vars[name] = std::move(v);
  }
  scopes_.push_back(std::move(frame));
  ++call_depth_;
  Status st;
  for (std::size_t i = 0; st.ok() && i < m.targets.size(); ++i) {
    if (scopes_.back().vars.count(m.targets[i])) continue;
    if (!m.defaults[i]) {
      scopes_.back().vars[m.targets[i]] = Value::undefined(fmt::format("'{}' is undefined", m.targets[i]));
      continue;
    }
    Result<Value> d = eval(*m.defaults[i]);
    if (d.ok())
      scopes_.back().vars[m.targets[i]] = std::move(d).value();
    else
      st = d.status();
  }
  Result<std::string> text = st.ok() ? capture(m.bodies[0]) : Result<std::string>(st);
  --call_depth_;
  scopes_.pop_back();
  if (!text.ok()) return text.status();
  return Value(std::move(text).value());
}

Result<Value> Evaluator::eval(const Expr& e) {
  Status st = step();
  if (!st.ok()) return at_line(st, e.line);
  Result<Value> v = eval_inner(e);
  if (!v.ok()) return at_line(v.status(), e.line);
  if (v->depth() > kMaxValueDepth) {
    return at_line(invalid_argument("value nested deeper than {} levels", kMaxValueDepth), e.line);
  }
  return v;
}

Result<CallArgs> Evaluator::eval_args(const Expr& e, std::size_t first) {
  CallArgs args;
  std::size_t n_named = e.names.size();
  std::size_t n_pos = e.args.size() - first - n_named;
  for (std::size_t i = first; i < e.args.size(); ++i) {
    CAI_ASSIGN_OR_RETURN(Value v, eval(*e.args[i]));
    if (i - first < n_pos)
      args.positional.push_back(std::move(v));
    else
      args.named.emplace_back(e.names[i - first - n_pos], std::move(v));
  }
  return args;
}

Result<Value> Evaluator::eval_inner(const Expr& e) {
  switch (e.kind) {
    case ExprKind::kLiteral: return e.literal;
    case ExprKind::kName: return lookup(e.name);
    case ExprKind::kList:
    case ExprKind::kTuple: {
      std::vector<Value> items;
      for (const ExprPtr& a : e.args) {
        CAI_ASSIGN_OR_RETURN(Value v, eval(*a));
        items.push_back(std::move(v));
      }
      return Value::list(std::move(items), e.kind == ExprKind::kTuple);
    }
    case ExprKind::kDict: {
      ValueDict d;
      for (std::size_t i = 0; i + 1 < e.args.size(); i += 2) {
        CAI_ASSIGN_OR_RETURN(Value k, eval(*e.args[i]));
        CAI_ASSIGN_OR_RETURN(Value v, eval(*e.args[i + 1]));
        if (!d.set(k, std::move(v))) return invalid_argument("unhashable dict key of type '{}'", type_name(k));
      }
      return Value::dict(std::move(d));
    }
    case ExprKind::kGetAttr: {
      CAI_ASSIGN_OR_RETURN(Value obj, eval(*e.args[0]));
      return get_attr(obj, e.name);
    }
    case ExprKind::kGetItem: {
      CAI_ASSIGN_OR_RETURN(Value obj, eval(*e.args[0]));
      CAI_ASSIGN_OR_RETURN(Value key, eval(*e.args[1]));
      return get_item(obj, key);
    }
    case ExprKind::kSlice: return eval_slice(e);
    case ExprKind::kCall: {
      CAI_ASSIGN_OR_RETURN(Value callee, eval(*e.args[0]));
      CAI_ASSIGN_OR_RETURN(CallArgs args, eval_args(e, 1));
      return call(callee, args);
    }
    case ExprKind::kFilter: {
      CAI_ASSIGN_OR_RETURN(Value subject, eval(*e.args[0]));
      CAI_ASSIGN_OR_RETURN(CallArgs args, eval_args(e, 1));
      return filter(e.name, subject, args);
    }
    case ExprKind::kTest: {
      CAI_ASSIGN_OR_RETURN(Value subject, eval(*e.args[0]));
      CAI_ASSIGN_OR_RETURN(CallArgs args, eval_args(e, 1));
      CAI_ASSIGN_OR_RETURN(bool r, test(e.name, subject, args));
      return Value(r != e.negate);
    }
    case ExprKind::kUnary: {
      CAI_ASSIGN_OR_RETURN(Value v, eval(*e.args[0]));
      if (e.name == "not") return Value(!truthy(v));
      if (v.is_undefined()) return undefined_error(v);
      if (!v.is_number()) return invalid_argument("bad operand type for unary {}: '{}'", e.name, type_name(v));
      if (e.name == "+") return v.kind() == Kind::kFloat ? v : Value(v.as_int());
      if (v.kind() == Kind::kFloat) return Value(-v.as_float());
      if (v.as_int() == INT64_MIN) return invalid_argument("integer overflow");
      return Value(-v.as_int());
    }
    case ExprKind::kBinary: return eval_binary(e);
    case ExprKind::kCompare: return eval_compare(e);
    case ExprKind::kCond: {
      CAI_ASSIGN_OR_RETURN(Value c, eval(*e.args[0]));
      if (truthy(c)) return eval(*e.args[1]);
      if (e.args[2]) return eval(*e.args[2]);
      return Value::undefined("the inline if-expression evaluated to false and no else section was defined");
    }
  }
  return internal_error("unknown expression kind");
}

Result<Value> Evaluator::eval_binary(const Expr& e) {
  CAI_ASSIGN_OR_RETURN(Value a, eval(*e.args[0]));
  if (e.name == "and") return truthy(a) ? eval(*e.args[1]) : Result<Value>(a);
  if (e.name == "or") return truthy(a) ? Result<Value>(a) : eval(*e.args[1]);
  CAI_ASSIGN_OR_RETURN(Value b, eval(*e.args[1]));
  return binary_op(*this, e.name, a, b);
}

Result<Value> Evaluator::eval_compare(const Expr& e) {
  CAI_ASSIGN_OR_RETURN(Value left, eval(*e.args[0]));
  for (std::size_t i = 0; i < e.names.size(); ++i) {
    CAI_ASSIGN_OR_RETURN(Value right, eval(*e.args[i + 1]));
    const std::string& op = e.names[i];
    bool r;
    if (op == "==" || op == "!=") {
      r = equals(left, right) == (op == "==");
    } else if (op == "in" || op == "notin") {
      CAI_ASSIGN_OR_RETURN(bool has, contains(right, left));
      r = has == (op == "in");
    } else {
      if (left.is_undefined()) return undefined_error(left);
      if (right.is_undefined()) return undefined_error(right);
      CAI_ASSIGN_OR_RETURN(int c, compare(left, right));
      r = op == "<" ? c < 0 : op == "<=" ? c <= 0 : op == ">" ? c > 0 : c >= 0;
    }
    if (!r) return Value(false);
    left = std::move(right);
  }
  return Value(true);
}

}  // namespace cai::jinja
