// Jinja lexer: splits a template into text and tag tokens with Hugging Face's whitespace settings.
#include "tokenizer/jinja/lexer.h"

#include <algorithm>
#include <cstring>

#include "tokenizer/jinja/pystr.h"

namespace cai::jinja {
namespace {

bool is_name_start(char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_'; }
bool is_digit(char c) { return c >= '0' && c <= '9'; }
bool is_tag_space(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v'; }

// Newlines normalised to \n and one trailing newline dropped, as jinja2 does (keep_trailing_newline=False).
std::string normalize_source(std::string_view in) {
  std::string out;
  out.reserve(in.size());
  for (std::size_t i = 0; i < in.size(); ++i) {
    if (in[i] == '\r') {
      out.push_back('\n');
      if (i + 1 < in.size() && in[i + 1] == '\n') ++i;
    } else {
      out.push_back(in[i]);
    }
  }
  if (!out.empty() && out.back() == '\n') out.pop_back();
  return out;
}

std::size_t skip_py_space(const std::string& s, std::size_t pos) {
  while (pos < s.size()) {
    std::size_t n = 1;
    auto b = static_cast<unsigned char>(s[pos]);
    if (b >= 0x80) n = (b >> 5) == 0x6 ? 2 : (b >> 4) == 0xE ? 3 : 4;
    std::u32string cp = utf8_decode(std::string_view(s).substr(pos, n));
    if (cp.size() != 1 || !py_isspace(cp[0])) break;
    pos += n;
  }
  return pos;
}

class Lexer {
 public:
  explicit Lexer(std::string_view source) : src_(normalize_source(source)) {
    line_starts_.push_back(0);
    for (std::size_t i = 0; i < src_.size(); ++i) {
      if (src_[i] == '\n') line_starts_.push_back(i + 1);
    }
  }

  Result<std::vector<Token>> run() {
    std::size_t pos = 0;
    while (pos < src_.size()) {
      std::size_t tag = find_tag_start(pos);
      std::string text = src_.substr(pos, tag - pos);
      if (tag == src_.size()) {
        emit(TokenType::kText, std::move(text), pos);
        break;
      }
      char kind = src_[tag + 1];
      char marker = tag + 2 < src_.size() ? src_[tag + 2] : '\0';
      pre_strip(text, marker, kind != '{');
      emit(TokenType::kText, std::move(text), pos);
      std::size_t body = tag + 2 + (marker == '-' || marker == '+' ? 1 : 0);
      Result<std::size_t> next = kind == '#'                   ? lex_comment(tag, body)
                                 : kind == '%' && is_raw(body) ? lex_raw(tag, body)
                                                               : lex_tag(tag, body, kind == '%');
      if (!next.ok()) return next.status();
      pos = *next;
    }
    out_.push_back(Token{TokenType::kEof, "", 0, 0});
    locate(out_.back(), src_.size());
    return std::move(out_);
  }

 private:
  std::size_t find_tag_start(std::size_t pos) const {
    while (true) {
      std::size_t p = src_.find('{', pos);
      if (p == std::string::npos || p + 1 >= src_.size()) return src_.size();
      char c = src_[p + 1];
      if (c == '{' || c == '%' || c == '#') return p;
      pos = p + 1;
    }
  }

  // Whitespace control on the text before a tag: `-` strips all, lstrip_blocks strips a line's indent.
  void pre_strip(std::string& text, char marker, bool block_or_comment) const {
    if (marker == '-') {
      text = py_strip(text, std::nullopt, StripSide::kRight);
    } else if (marker != '+' && block_or_comment) {
      std::size_t line_pos = text.rfind('\n');
      line_pos = line_pos == std::string::npos ? 0 : line_pos + 1;
      if (line_pos > 0 || line_starting_) {
        bool blank = std::all_of(text.begin() + static_cast<std::ptrdiff_t>(line_pos), text.end(),
                                 [](char c) { return c == ' ' || c == '\t' || c == '\f' || c == '\v'; });
        if (blank) text.resize(line_pos);
      }
    }
  }

  // Whitespace control after a tag ending at `end`: `-` eats all, trim_blocks eats one newline.
  std::size_t post_strip(std::size_t end, char marker, bool block_or_comment) {
    std::size_t pos = end;
    if (marker == '-') {
      pos = skip_py_space(src_, end);
    } else if (marker != '+' && block_or_comment && pos < src_.size() && src_[pos] == '\n') {
      ++pos;
    }
    char last = pos > 0 ? src_[pos - 1] : '\0';
    line_starting_ = pos > 0 && last == '\n';
    return pos;
  }

  Result<std::size_t> lex_comment(std::size_t tag, std::size_t body) {
    std::size_t close = src_.find("#}", body);
    if (close == std::string::npos) return error_at(tag, "missing end of comment tag");
    char marker = close > body && (src_[close - 1] == '-' || src_[close - 1] == '+') ? src_[close - 1] : '\0';
    return post_strip(close + 2, marker, true);
  }

  // `{% raw %}` at `body`? Then everything up to `{% endraw %}` is text.
  bool is_raw(std::size_t body) const { return match_keyword_tag(body, "raw") != std::string::npos; }

  // If src_[body..] is `\s*word\s*[-+]?%}`, returns the index just past `%}`, else npos.
  // jinja2 accepts no `+%}` on `{% raw %}` itself (then it is an unknown tag).
  std::size_t match_keyword_tag(std::size_t body, std::string_view word) const {
    std::size_t p = body;
    while (p < src_.size() && is_tag_space(src_[p])) ++p;
    if (src_.compare(p, word.size(), word) != 0) return std::string::npos;
    p += word.size();
    while (p < src_.size() && is_tag_space(src_[p])) ++p;
    if (p < src_.size() && (src_[p] == '-' || (src_[p] == '+' && word != "raw"))) ++p;
    return src_.compare(p, 2, "%}") == 0 ? p + 2 : std::string::npos;
  }

  Result<std::size_t> lex_raw(std::size_t tag, std::size_t body) {
    std::size_t open_end = match_keyword_tag(body, "raw");
    std::size_t data = post_strip(open_end, src_[open_end - 3], false);  // trim_blocks skips `{% raw %}`
    for (std::size_t p = src_.find("{%", data); p != std::string::npos; p = src_.find("{%", p + 1)) {
      char marker = p + 2 < src_.size() ? src_[p + 2] : '\0';
      std::size_t inner = p + 2 + (marker == '-' || marker == '+' ? 1 : 0);
      std::size_t end = match_keyword_tag(inner, "endraw");
      if (end == std::string::npos) continue;
      std::string text = src_.substr(data, p - data);
      line_starting_ = data > 0 && src_[data - 1] == '\n';
      pre_strip(text, marker, true);
      emit(TokenType::kText, std::move(text), data);
      return post_strip(end, src_[end - 3], true);
    }
    return error_at(tag, "missing {% endraw %} for {% raw %}");
  }

  Result<std::size_t> lex_tag(std::size_t tag, std::size_t body, bool is_block) {
    emit(is_block ? TokenType::kBlockBegin : TokenType::kVarBegin, is_block ? "{%" : "{{", tag);
    std::string brackets;
    std::size_t p = body;
    while (true) {
      while (p < src_.size() && is_tag_space(src_[p])) ++p;
      if (p >= src_.size()) return error_at(tag, is_block ? "unclosed block tag '{%'" : "unclosed variable tag '{{'");
      if (brackets.empty()) {
        std::string_view end = is_block ? "%}" : "}}";
        char marker = src_[p];
        bool has_marker = marker == '-' || (is_block && marker == '+');
        std::size_t q = has_marker ? p + 1 : p;
        if (src_.compare(q, 2, end) == 0) {
          emit(is_block ? TokenType::kBlockEnd : TokenType::kVarEnd, std::string(end), p);
          return post_strip(q + 2, has_marker ? marker : '\0', is_block);
        }
      }
      Result<std::size_t> next = lex_token(p, brackets);
      if (!next.ok()) return next.status();
      p = *next;
    }
  }

  Result<std::size_t> lex_token(std::size_t p, std::string& brackets) {
    char c = src_[p];
    if (is_name_start(c)) {
      std::size_t e = p;
      while (e < src_.size() && (is_name_start(src_[e]) || is_digit(src_[e]))) ++e;
      emit(TokenType::kName, src_.substr(p, e - p), p);
      return e;
    }
    if (is_digit(c)) return lex_number(p);
    if (c == '\'' || c == '"') return lex_string(p);
    static const char* const kOps[] = {"//", "**", "==", "!=", "<=", ">=", "+", "-", "*", "/", "%", "~", "<",
                                       ">",  "=",  "(",  ")",  "[",  "]",  "{", "}", ",", ".", ":", "|"};
    for (const char* op : kOps) {
      std::size_t n = std::strlen(op);
      if (src_.compare(p, n, op) != 0) continue;
      if (n == 1 && std::strchr("([{", c)) brackets.push_back(c);
      if (n == 1 && std::strchr(")]}", c)) {
        char want = c == ')' ? '(' : c == ']' ? '[' : '{';
        if (brackets.empty() || brackets.back() != want) return error_at(p, fmt::format("unexpected '{}'", c));
        brackets.pop_back();
      }
      emit(TokenType::kOp, op, p);
      return p + n;
    }
    return error_at(p, fmt::format("unexpected character '{}'", c));
  }

  Result<std::size_t> lex_number(std::size_t p) {
    auto digits = [&](std::size_t q) {  // \d+(_\d+)*
      if (q >= src_.size() || !is_digit(src_[q])) return q;
      while (q < src_.size() && (is_digit(src_[q]) || (src_[q] == '_' && q + 1 < src_.size() && is_digit(src_[q + 1]))))
        ++q;
      return q;
    };
    std::size_t e = digits(p);
    bool is_float = false;
    bool after_dot = p > 0 && src_[p - 1] == '.';  // `x.0.1` is two attribute lookups, not a float
    if (!after_dot && e + 1 < src_.size() && src_[e] == '.' && is_digit(src_[e + 1])) {
      e = digits(e + 1);
      is_float = true;
    }
    if (!after_dot && e < src_.size() && (src_[e] == 'e' || src_[e] == 'E')) {
      std::size_t q = e + 1;
      if (q < src_.size() && (src_[q] == '+' || src_[q] == '-')) ++q;
      std::size_t end = digits(q);
      if (end > q) {
        e = end;
        is_float = true;
      }
    }
    std::string text = src_.substr(p, e - p);
    text.erase(std::remove(text.begin(), text.end(), '_'), text.end());
    emit(is_float ? TokenType::kFloat : TokenType::kInt, std::move(text), p);
    return e;
  }

  Result<std::size_t> lex_string(std::size_t p);

  void emit(TokenType type, std::string text, std::size_t pos) {
    if (type == TokenType::kText && text.empty()) return;
    out_.push_back(Token{type, std::move(text), 0, 0});
    locate(out_.back(), pos);
  }

  void locate(Token& t, std::size_t pos) const {
    auto it = std::upper_bound(line_starts_.begin(), line_starts_.end(), pos);
    t.line = static_cast<int>(it - line_starts_.begin());
    t.col = static_cast<int>(pos - *(it - 1)) + 1;
  }

  Status error_at(std::size_t pos, const std::string& what) const {
    Token t{TokenType::kEof, "", 0, 0};
    locate(t, pos);
    return invalid_argument("chat template syntax error at line {} col {}: {}", t.line, t.col, what);
  }

  std::string src_;
  std::vector<std::size_t> line_starts_;
  std::vector<Token> out_;
  bool line_starting_ = true;
};

int hex_value(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

// A quoted literal with Python's escapes (\n \t \\ \' \xhh \uhhhh \Uhhhhhhhh \ooo ...).
Result<std::size_t> Lexer::lex_string(std::size_t p) {
  char quote = src_[p];
  std::string value;
  std::size_t i = p + 1;
  while (i < src_.size() && src_[i] != quote) {
    if (src_[i] != '\\') {
      value.push_back(src_[i++]);
      continue;
    }
    if (i + 1 >= src_.size()) break;
    char e = src_[i + 1];
    i += 2;
    static const char kSimple[] = "\\\\''\"\"a\ab\bf\fn\nr\rt\tv\v";
    const char* hit = nullptr;
    for (const char* s = kSimple; *s; s += 2) {
      if (*s == e) hit = s;
    }
    if (hit) {
      value.push_back(hit[1]);
    } else if (e == '\n') {
      // backslash-newline continues the line
    } else if (e == 'x' || e == 'u' || e == 'U') {
      int n = e == 'x' ? 2 : e == 'u' ? 4 : 8;
      char32_t cp = 0;
      for (int k = 0; k < n; ++k, ++i) {
        int h = i < src_.size() ? hex_value(src_[i]) : -1;
        if (h < 0) return error_at(p, fmt::format("truncated \\{} escape in string", e));
        cp = cp * 16 + static_cast<char32_t>(h);
      }
      if (cp > 0x10FFFF) return error_at(p, "illegal Unicode character in string escape");
      value += utf8_encode(std::u32string(1, cp));
    } else if (e >= '0' && e <= '7') {
      char32_t cp = static_cast<char32_t>(e - '0');
      for (int k = 0; k < 2 && i < src_.size() && src_[i] >= '0' && src_[i] <= '7'; ++k, ++i)
        cp = cp * 8 + (src_[i] - '0');
      value += utf8_encode(std::u32string(1, cp));
    } else {
      value.push_back('\\');
      value.push_back(e);
    }
  }
  if (i >= src_.size()) return error_at(p, "unterminated string literal");
  emit(TokenType::kString, std::move(value), p);
  return i + 1;
}

}  // namespace

Result<std::vector<Token>> lex(std::string_view source) { return Lexer(source).run(); }

}  // namespace cai::jinja
