// Regular expressions of JSON Schema's `pattern` (a subset of ECMAScript's syntax): parsed into a tree, then compiled
// into a DFA over the bytes of the JSON string's contents (escapes included) that the grammar can embed.
//
// Supported: literal characters, escapes (\d \D \w \W \s \S \n \r \t \f \v \0 \xHH \uHHHH \u{H...} \cX, escaped
// punctuation), classes ([a-z0-9_-], negated [^...]), '.', groups ((...), (?:...), (?<name>...)) with '|',
// quantifiers (* + ? {n} {n,} {n,m}, lazy forms alike), '^' at the start of the pattern (or of a top-level
// alternative), '$' anywhere, and lookaheads ((?=...), (?!...)) outside unbounded repetitions. A pattern without '^'
// matches anywhere in the string, as JSON Schema specifies. Refused, with the construct named: backreferences,
// lookbehinds, word boundaries (\b \B), Unicode property escapes (\p{...}).
#pragma once

#include <string_view>
#include <vector>

#include "core/status.h"
#include "runtime/grammar/char_automaton.h"

namespace cai::grammar {

struct RegexNode {
  enum class Kind {
    kChars,        // one character of `chars`
    kSequence,     // children one after another
    kAlternative,  // one of the children
    kRepeat,       // children[0] between min and max times (max < 0: no limit)
    kLookahead,    // children[0] must (negative: must not) match from here on; consumes nothing
    kStart,        // '^'
    kEnd,          // '$'
  };
  Kind kind = Kind::kSequence;
  CharSet chars;
  std::vector<RegexNode> children;
  int min = 0;
  int max = -1;
  bool negative = false;
};

// Largest count a quantifier ({n,m}) may give, and deepest nesting of groups.
inline constexpr int kMaxRegexRepeat = 1000;
inline constexpr int kMaxRegexDepth = 64;

// The tree of `pattern`. Errors start with "pattern: " and name the construct.
Result<RegexNode> parse_regex(std::string_view pattern);
// The contents (what lies between the quotes) of the JSON strings `pattern` matches, spelled as ContentNfa spells
// characters. Errors start with "pattern: ".
Result<ContentDfa> compile_regex(std::string_view pattern);

}  // namespace cai::grammar
