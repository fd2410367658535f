// Jinja parser: statements and tags ({% if %}, {% for %}, {% set %}, {% macro %}, ...) over lexer tokens.
#include "tokenizer/jinja/parser.h"

#include "tokenizer/jinja/builtins.h"
#include "tokenizer/jinja/parser_impl.h"

namespace cai::jinja {
namespace detail {
Result<Body> Parser::parse_body(std::initializer_list<std::string_view> ends, std::string* end_found) {
  DepthGuard guard(depth_);
  CAI_TRY(check_depth());
  Body body;
  while (true) {
    const Token& t = cur();
    if (t.type == TokenType::kEof) {
      if (ends.size() == 0) return body;
      return error(fmt::format("unexpected end of template, expected '{{% {} %}}'", *(ends.end() - 1)));
    }
    if (t.type == TokenType::kText) {
      auto s = std::make_unique<Stmt>();
      s->kind = StmtKind::kText;
      s->line = t.line;
      s->text = t.text;
      body.push_back(std::move(s));
      advance();
    } else if (t.type == TokenType::kVarBegin) {
      auto s = std::make_unique<Stmt>();
      s->kind = StmtKind::kOutput;
      s->line = t.line;
      advance();
      CAI_ASSIGN_OR_RETURN(s->expr, parse_tuple(true));
      if (cur().type != TokenType::kVarEnd) return error(fmt::format("expected '}}}}', got {}", describe(cur())));
      advance();
      body.push_back(std::move(s));
    } else if (t.type == TokenType::kBlockBegin) {
      const Token& tag = peek();
      for (std::string_view e : ends) {
        if (tag.type == TokenType::kName && tag.text == e) {
          *end_found = tag.text;
          advance();
          advance();
          return body;
        }
      }
      advance();
      CAI_ASSIGN_OR_RETURN(StmtPtr s, parse_statement());
      if (s) body.push_back(std::move(s));
    } else {
      return error(fmt::format("unexpected {}", describe(t)));
    }
  }
}

Result<StmtPtr> Parser::parse_statement() {
  int line = cur().line;
  const Token tag_token = cur();
  CAI_ASSIGN_OR_RETURN(std::string tag, expect_name());
  if (tag == "if") return parse_if(line);
  if (tag == "for") return parse_for(line);
  if (tag == "set") return parse_set(line);
  if (tag == "macro") return parse_macro(line);
  if (tag == "filter") return parse_filter_block(line);
  auto s = std::make_unique<Stmt>();
  s->line = line;
  if (tag == "generation") {
    s->kind = StmtKind::kGroup;
    CAI_TRY(expect_block_end());
    std::string end;
    CAI_ASSIGN_OR_RETURN(Body body, parse_body({"endgeneration"}, &end));
    s->bodies.push_back(std::move(body));
    CAI_TRY(expect_block_end());
    return s;
  }
  if (tag == "break" || tag == "continue") {
    if (loop_depth_ == 0) return error(fmt::format("'{}' outside of a loop", tag));
    s->kind = tag == "break" ? StmtKind::kBreak : StmtKind::kContinue;
    CAI_TRY(expect_block_end());
    return s;
  }
  return invalid_argument("chat template syntax error at line {} col {}: unknown tag '{}'", tag_token.line,
                          tag_token.col, tag);
}

Result<StmtPtr> Parser::parse_if(int line) {
  auto s = std::make_unique<Stmt>();
  s->kind = StmtKind::kIf;
  s->line = line;
  std::string end = "elif";
  while (end == "elif") {
    CAI_ASSIGN_OR_RETURN(ExprPtr cond, parse_tuple(true));
    s->conds.push_back(std::move(cond));
    CAI_TRY(expect_block_end());
    CAI_ASSIGN_OR_RETURN(Body body, parse_body({"elif", "else", "endif"}, &end));
    s->bodies.push_back(std::move(body));
  }
  if (end == "else") {
    CAI_TRY(expect_block_end());
    CAI_ASSIGN_OR_RETURN(Body body, parse_body({"endif"}, &end));
    s->bodies.push_back(std::move(body));
  }
  CAI_TRY(expect_block_end());
  return s;
}

Result<StmtPtr> Parser::parse_for(int line) {
  auto s = std::make_unique<Stmt>();
  s->kind = StmtKind::kFor;
  s->line = line;
  do {
    CAI_ASSIGN_OR_RETURN(std::string target, expect_name());
    s->targets.push_back(std::move(target));
  } while (skip_op(","));
  if (!skip_name("in")) return error(fmt::format("expected 'in', got {}", describe(cur())));
  CAI_ASSIGN_OR_RETURN(s->expr, parse_tuple(false));
  if (skip_name("if")) {
    CAI_ASSIGN_OR_RETURN(s->cond, parse_expression());
  }
  if (is_name("recursive")) return error("recursive loops are not supported");
  CAI_TRY(expect_block_end());
  std::string end;
  ++loop_depth_;
  Result<Body> body = parse_body({"else", "endfor"}, &end);
  --loop_depth_;
  if (!body.ok()) return body.status();
  s->bodies.push_back(std::move(body).value());
  if (end == "else") {
    CAI_TRY(expect_block_end());
    int saved_loops = loop_depth_;
    loop_depth_ = 0;
    Result<Body> else_body = parse_body({"endfor"}, &end);
    loop_depth_ = saved_loops;
    if (!else_body.ok()) return else_body.status();
    s->bodies.push_back(std::move(else_body).value());
  }
  CAI_TRY(expect_block_end());
  return s;
}

Result<StmtPtr> Parser::parse_set(int line) {
  auto s = std::make_unique<Stmt>();
  s->kind = StmtKind::kSet;
  s->line = line;
  CAI_ASSIGN_OR_RETURN(std::string first, expect_name());
  s->targets.push_back(std::move(first));
  if (skip_op(".")) {
    CAI_ASSIGN_OR_RETURN(s->attr, expect_name());
  } else {
    while (skip_op(",")) {
      CAI_ASSIGN_OR_RETURN(std::string more, expect_name());
      s->targets.push_back(std::move(more));
    }
  }
  if (skip_op("=")) {
    CAI_ASSIGN_OR_RETURN(s->expr, parse_tuple(true));
    CAI_TRY(expect_block_end());
    return s;
  }
  if (s->targets.size() != 1 || !s->attr.empty()) return error("a block set takes one plain name");
  CAI_TRY(expect_block_end());
  std::string end;
  CAI_ASSIGN_OR_RETURN(Body body, parse_body({"endset"}, &end));
  s->bodies.push_back(std::move(body));
  CAI_TRY(expect_block_end());
  return s;
}

Result<StmtPtr> Parser::parse_macro(int line) {
  auto s = std::make_unique<Stmt>();
  s->kind = StmtKind::kMacro;
  s->line = line;
  CAI_ASSIGN_OR_RETURN(s->text, expect_name());
  CAI_TRY(expect_op("("));
  while (!skip_op(")")) {
    if (!s->targets.empty()) CAI_TRY(expect_op(","));
    if (skip_op(")")) break;
    CAI_ASSIGN_OR_RETURN(std::string param, expect_name());
    s->targets.push_back(std::move(param));
    ExprPtr def;
    if (skip_op("=")) {
      CAI_ASSIGN_OR_RETURN(def, parse_expression());
    } else if (!s->defaults.empty() && s->defaults.back()) {
      return error("non-default macro argument follows default argument");
    }
    s->defaults.push_back(std::move(def));
  }
  CAI_TRY(expect_block_end());
  int saved_loops = loop_depth_;
  loop_depth_ = 0;
  std::string end;
  Result<Body> body = parse_body({"endmacro"}, &end);
  loop_depth_ = saved_loops;
  if (!body.ok()) return body.status();
  s->bodies.push_back(std::move(body).value());
  if (cur().type == TokenType::kName && cur().text == s->text) advance();  // {% endmacro name %}
  CAI_TRY(expect_block_end());
  return s;
}

Result<StmtPtr> Parser::parse_filter_block(int line) {
  auto s = std::make_unique<Stmt>();
  s->kind = StmtKind::kFilterBlock;
  s->line = line;
  ExprPtr chain;  // null subject: the block's output
  do {
    CAI_ASSIGN_OR_RETURN(std::string name, parse_dotted_name());
    if (!has_filter(name)) return error(fmt::format("no filter named '{}'", name));
    ExprPtr f = node(ExprKind::kFilter, line, std::move(name));
    add_child(*f, std::move(chain));
    if (is_op("(")) CAI_TRY(parse_call_args(*f));
    CAI_TRY(check_height(*f));
    chain = std::move(f);
  } while (skip_op("|"));
  s->expr = std::move(chain);
  CAI_TRY(expect_block_end());
  std::string end;
  CAI_ASSIGN_OR_RETURN(Body body, parse_body({"endfilter"}, &end));
  s->bodies.push_back(std::move(body));
  CAI_TRY(expect_block_end());
  return s;
}

}  // namespace detail

Result<std::shared_ptr<const Template>> parse_template(std::string_view source) {
  CAI_ASSIGN_OR_RETURN(std::vector<Token> tokens, lex(source));
  return detail::Parser(std::move(tokens)).run();
}

}  // namespace cai::jinja
