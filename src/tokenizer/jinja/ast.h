// Jinja syntax tree: expression and statement nodes produced by the parser and walked by the evaluator.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "tokenizer/jinja/value.h"

namespace cai::jinja {

enum class ExprKind {
  kLiteral,  // literal
  kName,     // name
  kList,     // args = elements
  kTuple,    // args = elements
  kDict,     // args = k0, v0, k1, v1, ...
  kGetAttr,  // args[0].name
  kGetItem,  // args[0][args[1]]
  kSlice,    // args[0][args[1]:args[2]:args[3]], absent parts are null
  kCall,     // args[0](args[1..]); the last names.size() args are keyword args called names
  kFilter,   // args[0] | name(args[1..]); args[0] is null inside {% filter %}
  kTest,     // args[0] is [not] name(args[1..]); negated by `negate`
  kUnary,    // name = "not" | "-" | "+"; args[0]
  kBinary,   // name = operator (and, or, +, -, *, /, //, %, **, ~); args[0], args[1]
  kCompare,  // args[0] names[0] args[1] names[1] args[2] ... (==, !=, <, <=, >, >=, in, notin)
  kCond,     // args[1] if args[0] else args[2] (args[2] null = undefined)
};

struct Expr {
  ExprKind kind;
  int line = 0;
  std::string name;
  Value literal;
  std::vector<std::unique_ptr<Expr>> args;
  std::vector<std::string> names;
  bool negate = false;
  int height = 1;  // 1 + tallest child; bounded by the parser so evaluation and destruction recurse safely
};
using ExprPtr = std::unique_ptr<Expr>;

inline void add_child(Expr& parent, std::unique_ptr<Expr> child) {
  if (child && child->height + 1 > parent.height) parent.height = child->height + 1;
  parent.args.push_back(std::move(child));
}

struct Stmt;
using StmtPtr = std::unique_ptr<Stmt>;
using Body = std::vector<StmtPtr>;

enum class StmtKind {
  kText,         // text
  kOutput,       // {{ expr }}
  kIf,           // conds[i] → bodies[i]; a trailing body without cond is the else
  kFor,          // for targets in expr [if cond]: bodies[0] else bodies[1]
  kSet,          // set targets (or target_ns.attr) = expr; with no expr, the block set: bodies[0]
  kMacro,        // macro name(params = defaults): bodies[0]
  kFilterBlock,  // filter expr (a kFilter chain with null subject): bodies[0]
  kGroup,        // bodies[0] rendered in place ({% generation %})
  kBreak,
  kContinue,
};

struct Stmt {
  StmtKind kind;
  int line = 0;
  std::string text;
  ExprPtr expr;                // output, for iterable, set value, filter chain
  ExprPtr cond;                // for-loop filter
  std::vector<ExprPtr> conds;  // if/elif conditions
  std::vector<Body> bodies;
  std::vector<std::string> targets;  // for / set names, macro params
  std::string attr;                  // set ns.attr: targets[0] is ns
  std::vector<ExprPtr> defaults;     // macro param defaults, null where none
};

struct Template {
  Body body;
};

}  // namespace cai::jinja
