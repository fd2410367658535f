// The `pattern` parser: ECMAScript regular-expression syntax (the subset regex.h lists) into a RegexNode tree.
#include <algorithm>
#include <cctype>
#include <climits>
#include <optional>
#include <string>
#include <tuple>

#include "runtime/grammar/regex.h"

namespace cai::grammar {

namespace {
namespace regex_parse {

CharSet digits() { return CharSet::range('0', '9'); }

CharSet word_chars() {
  CharSet s = CharSet::range('a', 'z');
  s.add('A', 'Z');
  s.add('0', '9');
  s.add('_', '_');
  return s;
}

// ECMAScript's white space and line terminators.
CharSet spaces() {
  CharSet s = CharSet::range('\t', '\r');
  for (char32_t c : {0x20u, 0xA0u, 0x1680u, 0x2028u, 0x2029u, 0x202Fu, 0x205Fu, 0x3000u, 0xFEFFu}) s.add(c, c);
  s.add(0x2000, 0x200A);
  return s;
}

// '.': any character but a line terminator.
CharSet dot() {
  CharSet lines = CharSet::range('\n', '\n');
  lines.add('\r', '\r');
  lines.add(0x2028, 0x2029);
  return lines.complement();
}

RegexNode assertion(RegexNode::Kind kind) {
  RegexNode n;
  n.kind = kind;
  return n;
}

RegexNode chars_node(CharSet set) {
  RegexNode n;
  n.kind = RegexNode::Kind::kChars;
  n.chars = std::move(set);
  return n;
}

class Parser {
 public:
  explicit Parser(std::string_view pattern) : p_(pattern) {}

  Result<RegexNode> parse() {
    CAI_ASSIGN_OR_RETURN(RegexNode n, alternation(0));
    if (!done()) return error("an unmatched ')'");
    return n;
  }

 private:
  bool done() const { return pos_ >= p_.size(); }
  char peek(size_t ahead = 0) const { return pos_ + ahead < p_.size() ? p_[pos_ + ahead] : '\0'; }
  bool lookat(std::string_view s) const { return p_.substr(pos_, s.size()) == s; }

  Status error(std::string_view what) const {
    return invalid_argument("pattern: {} is not supported (at offset {} of '{}')", what, pos_, p_);
  }

  Result<RegexNode> alternation(int depth) {
    if (depth > kMaxRegexDepth) return error("nesting groups deeper than 64 levels");
    RegexNode alt;
    alt.kind = RegexNode::Kind::kAlternative;
    for (;;) {
      CAI_ASSIGN_OR_RETURN(RegexNode branch, sequence(depth));
      alt.children.push_back(std::move(branch));
      if (peek() != '|') break;
      ++pos_;
    }
    if (alt.children.size() == 1) return std::move(alt.children[0]);
    return alt;
  }

  Result<RegexNode> sequence(int depth) {
    RegexNode seq;
    seq.kind = RegexNode::Kind::kSequence;
    while (!done() && peek() != '|' && peek() != ')') {
      CAI_ASSIGN_OR_RETURN(RegexNode a, atom(depth));
      CAI_ASSIGN_OR_RETURN(a, quantified(std::move(a)));
      seq.children.push_back(std::move(a));
    }
    return seq;
  }

  // A quantifier's bounds at pos_ ({n}, {n,}, {n,m}); nullopt (pos_ unchanged) when '{' starts none.
  std::optional<std::pair<int, int>> braces() {
    size_t at = pos_ + 1;
    auto number = [&]() -> std::optional<long> {
      const size_t begin = at;
      long v = 0;
      while (at < p_.size() && p_[at] >= '0' && p_[at] <= '9') {
        v = std::min<long>(v * 10 + (p_[at] - '0'), 1'000'000'000);
        ++at;
      }
      if (at == begin) return std::nullopt;
      return v;
    };
    const std::optional<long> lo = number();
    if (!lo) return std::nullopt;
    std::optional<long> hi = lo;
    if (at < p_.size() && p_[at] == ',') {
      ++at;
      hi = number();
      if (!hi) hi = -1;
    }
    if (at >= p_.size() || p_[at] != '}') return std::nullopt;
    pos_ = at + 1;
    return std::pair{static_cast<int>(std::min<long>(*lo, INT32_MAX)),
                     static_cast<int>(std::min<long>(*hi, INT32_MAX))};
  }

  Result<RegexNode> quantified(RegexNode a) {
    int min = 0, max = -1;
    const size_t start = pos_;
    if (peek() == '*') {
      ++pos_;
    } else if (peek() == '+') {
      min = 1;
      ++pos_;
    } else if (peek() == '?') {
      max = 1;
      ++pos_;
    } else if (peek() == '{') {
      const std::optional<std::pair<int, int>> b = braces();
      if (!b) return a;  // a literal '{'
      std::tie(min, max) = *b;
      if (max >= 0 && min > max) return error("a repetition {n,m} with n > m");
      if (min > kMaxRegexRepeat || max > kMaxRegexRepeat) return error("a repetition count above 1000");
    } else {
      return a;
    }
    if (a.kind != RegexNode::Kind::kChars && a.kind != RegexNode::Kind::kSequence &&
        a.kind != RegexNode::Kind::kAlternative && a.kind != RegexNode::Kind::kRepeat) {
      pos_ = start;
      return error("a quantifier on '^', '$' or a lookahead");
    }
    if (peek() == '?') ++pos_;  // lazy: the same strings
    RegexNode r;
    r.kind = RegexNode::Kind::kRepeat;
    r.min = min;
    r.max = max;
    r.children.push_back(std::move(a));
    return r;
  }

  Result<RegexNode> atom(int depth) {
    const char c = peek();
    switch (c) {
      case '^': ++pos_; return assertion(RegexNode::Kind::kStart);
      case '$': ++pos_; return assertion(RegexNode::Kind::kEnd);
      case '(': return group(depth);
      case '[': return char_class();
      case '.': ++pos_; return chars_node(dot());
      case '*':
      case '+':
      case '?': return error(std::string("a quantifier with nothing to repeat ('") + c + "')");
      case '\\': return escape();
      case '{': {
        const size_t start = pos_;
        if (braces()) {
          pos_ = start;
          return error("a quantifier with nothing to repeat ('{')");
        }
        break;
      }
      default: break;
    }
    CAI_ASSIGN_OR_RETURN(char32_t cp, literal());
    return chars_node(CharSet::range(cp, cp));
  }

  // One UTF-8 encoded character of the pattern.
  Result<char32_t> literal() {
    const auto b = static_cast<unsigned char>(p_[pos_]);
    const int n = b < 0x80 ? 1 : b >= 0xF0 ? 4 : b >= 0xE0 ? 3 : b >= 0xC0 ? 2 : 0;
    if (n == 0 || pos_ + static_cast<size_t>(n) > p_.size()) return error("invalid UTF-8");
    char32_t cp = n == 1 ? b : b & (0x7F >> n);
    for (int i = 1; i < n; ++i) cp = (cp << 6) | (static_cast<unsigned char>(p_[pos_ + static_cast<size_t>(i)]) & 0x3F);
    pos_ += static_cast<size_t>(n);
    return cp;
  }

  Result<RegexNode> group(int depth) {
    ++pos_;  // '('
    bool lookahead = false, negative = false;
    if (lookat("?:")) {
      pos_ += 2;
    } else if (lookat("?=") || lookat("?!")) {
      lookahead = true;
      negative = peek(1) == '!';
      pos_ += 2;
    } else if (lookat("?<=") || lookat("?<!")) {
      return error("a lookbehind ('(?<=' or '(?<!')");
    } else if (lookat("?<")) {  // a named group: the name does not matter
      const size_t close = p_.find('>', pos_);
      if (close == std::string_view::npos) return error("an unclosed group name");
      pos_ = close + 1;
    } else if (peek() == '?') {
      return error("the group syntax '(?'");
    }
    CAI_ASSIGN_OR_RETURN(RegexNode body, alternation(depth + 1));
    if (peek() != ')') return error("an unclosed '('");
    ++pos_;
    if (!lookahead) return body;
    RegexNode n;
    n.kind = RegexNode::Kind::kLookahead;
    n.negative = negative;
    n.children.push_back(std::move(body));
    return n;
  }

  // A class escape (\d \w \s and their negations) after the '\'; nullopt for any other letter.
  static std::optional<CharSet> class_escape(char c) {
    switch (c) {
      case 'd': return digits();
      case 'D': return digits().complement();
      case 'w': return word_chars();
      case 'W': return word_chars().complement();
      case 's': return spaces();
      case 'S': return spaces().complement();
      default: return std::nullopt;
    }
  }

  // `count` hex digits at pos_ (count < 0: one or more up to '}').
  Result<char32_t> hex(int count) {
    char32_t v = 0;
    int n = 0;
    while (!done() && (count < 0 || n < count) && std::isxdigit(static_cast<unsigned char>(peek()))) {
      const char h = peek();
      v = v * 16 + static_cast<char32_t>(h <= '9' ? h - '0' : (h | 0x20) - 'a' + 10);
      if (v > 0x10FFFF) return error("a code point above U+10FFFF");
      ++pos_;
      ++n;
    }
    if (n == 0 || (count >= 0 && n != count)) return error("a malformed \\x or \\u escape");
    return v;
  }

  // The character of an escape after the '\' (shared by classes and the rest of the pattern).
  Result<char32_t> char_escape(bool in_class) {
    const char c = peek();
    ++pos_;
    switch (c) {
      case 'n': return U'\n';
      case 'r': return U'\r';
      case 't': return U'\t';
      case 'f': return U'\f';
      case 'v': return U'\v';
      case 'b':
        if (in_class) return U'\b';
        --pos_;
        return error("the word boundary '\\b'");
      case 'B': --pos_; return error("the word boundary '\\B'");
      case '0':
        if (peek() >= '0' && peek() <= '9') return error("an octal escape");
        return U'\0';
      case 'x': return hex(2);
      case 'u': {
        if (peek() != '{') {
          CAI_ASSIGN_OR_RETURN(char32_t v, hex(4));
          // A surrogate pair written as two escapes is one character.
          if (v >= 0xD800 && v <= 0xDBFF && lookat("\\u")) {
            const size_t at = pos_;
            pos_ += 2;
            Result<char32_t> low = hex(4);
            if (low.ok() && *low >= 0xDC00 && *low <= 0xDFFF) return 0x10000 + ((v - 0xD800) << 10) + (*low - 0xDC00);
            pos_ = at;
          }
          return v;
        }
        ++pos_;
        CAI_ASSIGN_OR_RETURN(char32_t v, hex(-1));
        if (peek() != '}') return error("a malformed \\u{...} escape");
        ++pos_;
        return v;
      }
      case 'c':
        if (!std::isalpha(static_cast<unsigned char>(peek()))) return error("a '\\c' without a letter");
        ++pos_;
        return static_cast<char32_t>(p_[pos_ - 1] % 32);
      case 'p':
      case 'P': --pos_; return error("a Unicode property escape ('\\p{...}')");
      case 'k': --pos_; return error("a named backreference ('\\k<name>')");
      default: break;
    }
    if (c >= '1' && c <= '9') {
      --pos_;
      return error("a backreference ('\\1'...)");
    }
    --pos_;  // any other character stands for itself
    return literal();
  }

  Result<RegexNode> escape() {
    ++pos_;  // '\'
    if (done()) return error("a '\\' at the end");
    if (std::optional<CharSet> set = class_escape(peek())) {
      ++pos_;
      return chars_node(std::move(*set));
    }
    CAI_ASSIGN_OR_RETURN(char32_t cp, char_escape(false));
    return chars_node(CharSet::range(cp, cp));
  }

  // One member of a class: a character, or a set (\d ...) returned in `set`.
  Result<char32_t> class_atom(std::optional<CharSet>& set) {
    set.reset();
    if (peek() != '\\') return literal();
    ++pos_;
    if (done()) return error("a '\\' at the end");
    if ((set = class_escape(peek()))) {
      ++pos_;
      return U'\0';
    }
    if (peek() == '-') {
      ++pos_;
      return U'-';
    }
    return char_escape(true);
  }

  Result<RegexNode> char_class() {
    ++pos_;  // '['
    const bool negate = peek() == '^';
    if (negate) ++pos_;
    CharSet set;
    while (!done() && peek() != ']') {
      std::optional<CharSet> a_set;
      CAI_ASSIGN_OR_RETURN(char32_t a, class_atom(a_set));
      if (a_set) {
        set.add(*a_set);
        continue;
      }
      if (peek() == '-' && peek(1) != ']' && pos_ + 1 < p_.size()) {  // a range, or a literal '-' after a set
        ++pos_;
        std::optional<CharSet> b_set;
        CAI_ASSIGN_OR_RETURN(char32_t b, class_atom(b_set));
        if (b_set) {
          set.add(a, a);
          set.add('-', '-');
          set.add(*b_set);
          continue;
        }
        if (b < a) return error("a class range out of order");
        set.add(a, b);
        continue;
      }
      set.add(a, a);
    }
    if (done()) return error("an unclosed '['");
    ++pos_;  // ']'
    return chars_node(negate ? set.complement() : set);
  }

  std::string_view p_;
  size_t pos_ = 0;
};

}  // namespace regex_parse
}  // namespace

Result<RegexNode> parse_regex(std::string_view pattern) { return regex_parse::Parser(pattern).parse(); }

}  // namespace cai::grammar
