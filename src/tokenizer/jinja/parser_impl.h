// Jinja parser internals: the recursive-descent Parser shared by parser.cpp (statements) and parser_expr.cpp.
#pragma once

#include <initializer_list>
#include <string>
#include <vector>

#include "tokenizer/jinja/ast.h"
#include "tokenizer/jinja/lexer.h"
#include "tokenizer/jinja/parser.h"

namespace cai::jinja::detail {

class Parser {
 public:
  explicit Parser(std::vector<Token> tokens) : toks_(std::move(tokens)) {}

  Result<std::shared_ptr<const Template>> run() {
    auto tpl = std::make_shared<Template>();
    std::string end;
    CAI_ASSIGN_OR_RETURN(tpl->body, parse_body({}, &end));
    return std::shared_ptr<const Template>(std::move(tpl));
  }

 private:
  // ---- token helpers ----
  const Token& cur() const { return toks_[pos_]; }
  const Token& peek(std::size_t ahead = 1) const { return toks_[std::min(pos_ + ahead, toks_.size() - 1)]; }
  void advance() {
    if (pos_ + 1 < toks_.size()) ++pos_;
  }
  bool is_op(std::string_view op) const { return cur().type == TokenType::kOp && cur().text == op; }
  bool is_name(std::string_view name) const { return cur().type == TokenType::kName && cur().text == name; }
  bool skip_op(std::string_view op) {
    if (!is_op(op)) return false;
    advance();
    return true;
  }
  bool skip_name(std::string_view name) {
    if (!is_name(name)) return false;
    advance();
    return true;
  }
  static std::string describe(const Token& t) {
    switch (t.type) {
      case TokenType::kEof: return "end of template";
      case TokenType::kBlockEnd: return "'%}'";
      case TokenType::kVarEnd: return "'}}'";
      case TokenType::kString: return "string literal";
      default: return "'" + t.text + "'";
    }
  }
  Status error(const std::string& what) const {
    return invalid_argument("chat template syntax error at line {} col {}: {}", cur().line, cur().col, what);
  }
  Status expect_op(std::string_view op) {
    if (skip_op(op)) return Status();
    return error(fmt::format("expected '{}', got {}", op, describe(cur())));
  }
  Status expect_block_end() {
    if (cur().type == TokenType::kBlockEnd) {
      advance();
      return Status();
    }
    return error(fmt::format("expected '%}}', got {}", describe(cur())));
  }
  Result<std::string> expect_name() {
    if (cur().type != TokenType::kName) return error(fmt::format("expected a name, got {}", describe(cur())));
    std::string n = cur().text;
    advance();
    return n;
  }
  ExprPtr node(ExprKind kind, int line, std::string name = {}) {
    auto e = std::make_unique<Expr>();
    e->kind = kind;
    e->line = line;
    e->name = std::move(name);
    return e;
  }

  struct DepthGuard {
    explicit DepthGuard(int& d) : depth(d) { ++depth; }
    ~DepthGuard() { --depth; }
    int& depth;
  };
  Status check_height(const Expr& e) const {
    return e.height > kMaxSyntaxDepth ? error(fmt::format("expression nested deeper than {} levels", kMaxSyntaxDepth))
                                      : Status();
  }
  Status check_depth() const {
    return depth_ > kMaxSyntaxDepth ? error(fmt::format("nesting deeper than {} levels", kMaxSyntaxDepth)) : Status();
  }

  // ---- statements ----
  Result<Body> parse_body(std::initializer_list<std::string_view> ends, std::string* end_found);
  Result<StmtPtr> parse_statement();
  Result<StmtPtr> parse_if(int line);
  Result<StmtPtr> parse_for(int line);
  Result<StmtPtr> parse_set(int line);
  Result<StmtPtr> parse_macro(int line);
  Result<StmtPtr> parse_filter_block(int line);

  // ---- expressions ----
  Result<ExprPtr> parse_tuple(bool with_condexpr);
  Result<ExprPtr> parse_expression(bool with_condexpr = true);
  Result<ExprPtr> parse_condexpr();
  Result<ExprPtr> parse_or();
  Result<ExprPtr> parse_and();
  Result<ExprPtr> parse_not();
  Result<ExprPtr> parse_compare();
  Result<ExprPtr> parse_binary_level(int level);
  Result<ExprPtr> parse_unary(bool with_filter);
  Result<ExprPtr> parse_primary();
  Result<ExprPtr> parse_collection(ExprKind kind, std::string_view close);
  Result<ExprPtr> parse_postfix(ExprPtr e);
  Result<ExprPtr> parse_subscript(ExprPtr e);
  Result<ExprPtr> parse_filter_expr(ExprPtr e);
  Status parse_call_args(Expr& call);
  Result<std::string> parse_dotted_name();

  std::vector<Token> toks_;
  std::size_t pos_ = 0;
  int depth_ = 0;
  int loop_depth_ = 0;
};

}  // namespace cai::jinja::detail
