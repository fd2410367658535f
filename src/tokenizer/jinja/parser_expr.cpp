// Jinja parser: expressions, one function per precedence level as in jinja2 (filters and tests bind tightest).
#include <charconv>
#include <cstdlib>

#include "tokenizer/jinja/builtins.h"
#include "tokenizer/jinja/parser_impl.h"

namespace cai::jinja::detail {

Result<ExprPtr> Parser::parse_tuple(bool with_condexpr) {
  int line = cur().line;
  CAI_ASSIGN_OR_RETURN(ExprPtr first, parse_expression(with_condexpr));
  if (!is_op(",")) return first;
  ExprPtr tuple = node(ExprKind::kTuple, line);
  add_child(*tuple, std::move(first));
  while (skip_op(",")) {
    TokenType t = cur().type;
    if (t == TokenType::kBlockEnd || t == TokenType::kVarEnd || is_op(")") || is_name("if")) break;
    CAI_ASSIGN_OR_RETURN(ExprPtr item, parse_expression(with_condexpr));
    add_child(*tuple, std::move(item));
  }
  return tuple;
}

Result<ExprPtr> Parser::parse_expression(bool with_condexpr) {
  DepthGuard guard(depth_);
  CAI_TRY(check_depth());
  return with_condexpr ? parse_condexpr() : parse_or();
}

Result<ExprPtr> Parser::parse_condexpr() {
  int line = cur().line;
  CAI_ASSIGN_OR_RETURN(ExprPtr value, parse_or());
  while (skip_name("if")) {
    ExprPtr c = node(ExprKind::kCond, line);
    CAI_ASSIGN_OR_RETURN(ExprPtr cond, parse_or());
    ExprPtr otherwise;
    if (skip_name("else")) {
      CAI_ASSIGN_OR_RETURN(otherwise, parse_condexpr());
    }
    add_child(*c, std::move(cond));
    add_child(*c, std::move(value));
    add_child(*c, std::move(otherwise));
    CAI_TRY(check_height(*c));
    value = std::move(c);
  }
  return value;
}

Result<ExprPtr> Parser::parse_or() {
  CAI_ASSIGN_OR_RETURN(ExprPtr left, parse_and());
  while (is_name("or")) {
    int line = cur().line;
    advance();
    CAI_ASSIGN_OR_RETURN(ExprPtr right, parse_and());
    ExprPtr b = node(ExprKind::kBinary, line, "or");
    add_child(*b, std::move(left));
    add_child(*b, std::move(right));
    CAI_TRY(check_height(*b));
    left = std::move(b);
  }
  return left;
}

Result<ExprPtr> Parser::parse_and() {
  CAI_ASSIGN_OR_RETURN(ExprPtr left, parse_not());
  while (is_name("and")) {
    int line = cur().line;
    advance();
    CAI_ASSIGN_OR_RETURN(ExprPtr right, parse_not());
    ExprPtr b = node(ExprKind::kBinary, line, "and");
    add_child(*b, std::move(left));
    add_child(*b, std::move(right));
    CAI_TRY(check_height(*b));
    left = std::move(b);
  }
  return left;
}

Result<ExprPtr> Parser::parse_not() {
  if (!is_name("not")) return parse_compare();
  DepthGuard guard(depth_);
  CAI_TRY(check_depth());
  ExprPtr u = node(ExprKind::kUnary, cur().line, "not");
  advance();
  CAI_ASSIGN_OR_RETURN(ExprPtr operand, parse_not());
  add_child(*u, std::move(operand));
  return u;
}

Result<ExprPtr> Parser::parse_compare() {
  int line = cur().line;
  CAI_ASSIGN_OR_RETURN(ExprPtr first, parse_binary_level(0));
  ExprPtr cmp;
  while (true) {
    std::string op;
    if (cur().type == TokenType::kOp && (cur().text == "==" || cur().text == "!=" || cur().text == "<" ||
                                         cur().text == "<=" || cur().text == ">" || cur().text == ">=")) {
      op = cur().text;
      advance();
    } else if (is_name("in")) {
      op = "in";
      advance();
    } else if (is_name("not") && peek().type == TokenType::kName && peek().text == "in") {
      op = "notin";
      advance();
      advance();
    } else {
      break;
    }
    if (!cmp) {
      cmp = node(ExprKind::kCompare, line);
      add_child(*cmp, std::move(first));
    }
    CAI_ASSIGN_OR_RETURN(ExprPtr rhs, parse_binary_level(0));
    cmp->names.push_back(std::move(op));
    add_child(*cmp, std::move(rhs));
    CAI_TRY(check_height(*cmp));
  }
  return cmp ? std::move(cmp) : std::move(first);
}

// Levels, loosest first: + -, ~, * / // %, ** (all left-associative, as in jinja2).
Result<ExprPtr> Parser::parse_binary_level(int level) {
  static const std::vector<std::vector<std::string_view>> kLevels = {{"+", "-"}, {"~"}, {"*", "/", "//", "%"}, {"**"}};
  auto operand = [&]() {
    return level + 1 < static_cast<int>(kLevels.size()) ? parse_binary_level(level + 1) : parse_unary(true);
  };
  CAI_ASSIGN_OR_RETURN(ExprPtr left, operand());
  while (true) {
    std::string op;
    for (std::string_view candidate : kLevels[static_cast<std::size_t>(level)]) {
      if (is_op(candidate)) op = candidate;
    }
    if (op.empty()) return left;
    int line = cur().line;
    advance();
    CAI_ASSIGN_OR_RETURN(ExprPtr right, operand());
    ExprPtr b = node(ExprKind::kBinary, line, op);
    add_child(*b, std::move(left));
    add_child(*b, std::move(right));
    CAI_TRY(check_height(*b));
    left = std::move(b);
  }
}

Result<ExprPtr> Parser::parse_unary(bool with_filter) {
  DepthGuard guard(depth_);
  CAI_TRY(check_depth());
  ExprPtr e;
  if (is_op("-") || is_op("+")) {
    e = node(ExprKind::kUnary, cur().line, cur().text);
    advance();
    CAI_ASSIGN_OR_RETURN(ExprPtr operand, parse_unary(false));
    add_child(*e, std::move(operand));
  } else {
    CAI_ASSIGN_OR_RETURN(e, parse_primary());
  }
  CAI_ASSIGN_OR_RETURN(e, parse_postfix(std::move(e)));
  if (with_filter) {
    CAI_ASSIGN_OR_RETURN(e, parse_filter_expr(std::move(e)));
  }
  return e;
}

Result<ExprPtr> Parser::parse_primary() {
  const Token t = cur();
  if (t.type == TokenType::kName) {
    advance();
    ExprPtr lit = node(ExprKind::kLiteral, t.line);
    if (t.text == "true" || t.text == "True")
      lit->literal = true;
    else if (t.text == "false" || t.text == "False")
      lit->literal = false;
    else if (t.text == "none" || t.text == "None")
      lit->literal = Value::none();
    else
      return node(ExprKind::kName, t.line, t.text);
    return lit;
  }
  if (t.type == TokenType::kString) {
    std::string s;
    while (cur().type == TokenType::kString) {  // adjacent literals concatenate
      s += cur().text;
      advance();
    }
    ExprPtr lit = node(ExprKind::kLiteral, t.line);
    lit->literal = Value(std::move(s));
    return lit;
  }
  if (t.type == TokenType::kInt || t.type == TokenType::kFloat) {
    advance();
    ExprPtr lit = node(ExprKind::kLiteral, t.line);
    const char* b = t.text.data();
    const char* e = b + t.text.size();
    if (t.type == TokenType::kInt) {
      std::int64_t v = 0;
      auto res = std::from_chars(b, e, v);
      if (res.ec != std::errc() || res.ptr != e) return error("integer literal out of range");
      lit->literal = v;
    } else {
      lit->literal = std::strtod(t.text.c_str(), nullptr);
    }
    return lit;
  }
  if (skip_op("(")) {
    if (skip_op(")")) return node(ExprKind::kTuple, t.line);
    CAI_ASSIGN_OR_RETURN(ExprPtr inner, parse_tuple(true));
    CAI_TRY(expect_op(")"));
    return inner;
  }
  if (skip_op("[")) return parse_collection(ExprKind::kList, "]");
  if (skip_op("{")) return parse_collection(ExprKind::kDict, "}");
  return error(fmt::format("unexpected {}", describe(t)));
}

Result<ExprPtr> Parser::parse_collection(ExprKind kind, std::string_view close) {
  ExprPtr c = node(kind, cur().line);
  while (!skip_op(close)) {
    if (!c->args.empty()) {
      CAI_TRY(expect_op(","));
      if (skip_op(close)) break;
    }
    CAI_ASSIGN_OR_RETURN(ExprPtr item, parse_expression());
    add_child(*c, std::move(item));
    if (kind == ExprKind::kDict) {
      CAI_TRY(expect_op(":"));
      CAI_ASSIGN_OR_RETURN(ExprPtr value, parse_expression());
      add_child(*c, std::move(value));
    }
  }
  return c;
}

Result<ExprPtr> Parser::parse_postfix(ExprPtr e) {
  while (true) {
    int line = cur().line;
    if (skip_op(".")) {
      if (cur().type == TokenType::kInt) {  // foo.0 is foo[0]
        CAI_ASSIGN_OR_RETURN(ExprPtr idx, parse_primary());
        ExprPtr g = node(ExprKind::kGetItem, line);
        add_child(*g, std::move(e));
        add_child(*g, std::move(idx));
        CAI_TRY(check_height(*g));
        e = std::move(g);
        continue;
      }
      CAI_ASSIGN_OR_RETURN(std::string attr, expect_name());
      ExprPtr g = node(ExprKind::kGetAttr, line, std::move(attr));
      add_child(*g, std::move(e));
      CAI_TRY(check_height(*g));
      e = std::move(g);
    } else if (skip_op("[")) {
      CAI_ASSIGN_OR_RETURN(e, parse_subscript(std::move(e)));
    } else if (is_op("(")) {
      ExprPtr call = node(ExprKind::kCall, line);
      add_child(*call, std::move(e));
      CAI_TRY(parse_call_args(*call));
      CAI_TRY(check_height(*call));
      e = std::move(call);
    } else {
      return e;
    }
  }
}

Result<ExprPtr> Parser::parse_subscript(ExprPtr e) {
  int line = cur().line;
  ExprPtr parts[3];
  if (!is_op(":")) {
    CAI_ASSIGN_OR_RETURN(parts[0], parse_expression());
    if (skip_op("]")) {
      ExprPtr g = node(ExprKind::kGetItem, line);
      add_child(*g, std::move(e));
      add_child(*g, std::move(parts[0]));
      return g;
    }
  }
  CAI_TRY(expect_op(":"));
  if (!is_op("]") && !is_op(":")) {
    CAI_ASSIGN_OR_RETURN(parts[1], parse_expression());
  }
  if (skip_op(":") && !is_op("]")) {
    CAI_ASSIGN_OR_RETURN(parts[2], parse_expression());
  }
  CAI_TRY(expect_op("]"));
  ExprPtr s = node(ExprKind::kSlice, line);
  add_child(*s, std::move(e));
  for (ExprPtr& p : parts) add_child(*s, std::move(p));
  return s;
}

Result<std::string> Parser::parse_dotted_name() {
  CAI_ASSIGN_OR_RETURN(std::string name, expect_name());
  while (is_op(".") && peek().type == TokenType::kName) {
    advance();
    name += "." + cur().text;
    advance();
  }
  return name;
}

Result<ExprPtr> Parser::parse_filter_expr(ExprPtr e) {
  while (true) {
    int line = cur().line;
    if (skip_op("|")) {
      CAI_ASSIGN_OR_RETURN(std::string name, parse_dotted_name());
      if (!has_filter(name)) return error(fmt::format("no filter named '{}'", name));
      ExprPtr f = node(ExprKind::kFilter, line, std::move(name));
      add_child(*f, std::move(e));
      if (is_op("(")) CAI_TRY(parse_call_args(*f));
      CAI_TRY(check_height(*f));
      e = std::move(f);
    } else if (skip_name("is")) {
      bool negate = skip_name("not");
      CAI_ASSIGN_OR_RETURN(std::string name, parse_dotted_name());
      if (!has_test(name)) return error(fmt::format("no test named '{}'", name));
      ExprPtr t = node(ExprKind::kTest, line, std::move(name));
      t->negate = negate;
      add_child(*t, std::move(e));
      TokenType ty = cur().type;
      if (is_op("(")) {
        CAI_TRY(parse_call_args(*t));
      } else if ((ty == TokenType::kName || ty == TokenType::kString || ty == TokenType::kInt ||
                  ty == TokenType::kFloat || is_op("[") || is_op("{")) &&
                 !is_name("else") && !is_name("or") && !is_name("and")) {
        if (is_name("is")) return error("cannot chain multiple tests with 'is'");
        CAI_ASSIGN_OR_RETURN(ExprPtr arg, parse_primary());
        CAI_ASSIGN_OR_RETURN(arg, parse_postfix(std::move(arg)));
        add_child(*t, std::move(arg));
      }
      CAI_TRY(check_height(*t));
      e = std::move(t);
    } else if (is_op("(")) {
      ExprPtr call = node(ExprKind::kCall, line);
      add_child(*call, std::move(e));
      CAI_TRY(parse_call_args(*call));
      CAI_TRY(check_height(*call));
      e = std::move(call);
    } else {
      return e;
    }
  }
}

// `(a, b, k=v)` appended to call.args; keyword names go to call.names (they are the trailing args).
Status Parser::parse_call_args(Expr& call) {
  CAI_TRY(expect_op("("));
  bool first = true;
  while (!skip_op(")")) {
    if (!first) {
      CAI_TRY(expect_op(","));
      if (skip_op(")")) break;
    }
    first = false;
    if (cur().type == TokenType::kName && peek().type == TokenType::kOp && peek().text == "=") {
      call.names.push_back(cur().text);
      advance();
      advance();
    } else if (!call.names.empty()) {
      return error("positional argument follows keyword argument");
    }
    CAI_ASSIGN_OR_RETURN(ExprPtr arg, parse_expression());
    add_child(call, std::move(arg));
  }
  return Status();
}

}  // namespace cai::jinja::detail
