// Pattern: a PCRE2 regex (UTF + Unicode properties, JIT) or a literal string, finding every match in a text.
#pragma once

#include <cstddef>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "core/status.h"

namespace cai::tok {

struct Span {
  size_t begin = 0;
  size_t end = 0;
};

class Pattern {
 public:
  // `regex` uses PCRE2 syntax; HF tokenizer.json (Oniguruma) patterns are accepted as they are.
  static Result<Pattern> regex(std::string_view regex);
  static Pattern literal(std::string_view text);

  // Non-overlapping matches, left to right. `text` must be valid UTF-8. Empty matches are skipped.
  std::vector<Span> find_all(std::string_view text) const;
  // Every match replaced by `content`.
  std::string replace_all(std::string_view text, std::string_view content) const;

 private:
  struct Code;
  std::shared_ptr<const Code> code_;  // null for a literal
  std::string literal_;
};

// HF tokenizer.json writes a pattern as {"String": "..."} (literal) or {"Regex": "..."}.
Result<Pattern> pattern_from_json(const nlohmann::json& j);

}  // namespace cai::tok
