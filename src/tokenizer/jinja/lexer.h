// Jinja lexer: template source → text and tag tokens, applying trim_blocks/lstrip_blocks and -/+ markers.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "core/status.h"

namespace cai::jinja {

enum class TokenType {
  kText,        // literal template text (already whitespace-controlled)
  kVarBegin,    // {{
  kVarEnd,      // }}
  kBlockBegin,  // {%
  kBlockEnd,    // %}
  kName,
  kString,  // text holds the unescaped value
  kInt,
  kFloat,
  kOp,  // text holds the operator: + - * / // % ** ~ == != < <= > >= = ( ) [ ] { } , . : |
  kEof,
};

struct Token {
  TokenType type;
  std::string text;
  int line = 1;
  int col = 1;
};

// Lexes with Hugging Face's settings: trim_blocks, lstrip_blocks, one trailing newline dropped.
Result<std::vector<Token>> lex(std::string_view source);

}  // namespace cai::jinja
