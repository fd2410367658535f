// Jinja parser: tokens → syntax tree (statements and expressions with jinja2's operator precedence).
#pragma once

#include <memory>
#include <string_view>

#include "core/status.h"
#include "tokenizer/jinja/ast.h"

namespace cai::jinja {

inline constexpr int kMaxSyntaxDepth = 200;  // nested tags/brackets and expression height; deeper is rejected

// Syntax errors come back as invalid_argument naming line and column.
Result<std::shared_ptr<const Template>> parse_template(std::string_view source);

}  // namespace cai::jinja
