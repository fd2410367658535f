// Python str semantics on UTF-8 text: decoding, whitespace, strip/split/replace, repr and float formatting.
#include "tokenizer/jinja/pystr.h"
#include "tokenizer/unicode.h"

#include <charconv>
#include <cmath>
#include <cstdio>
#include <cstdlib>

namespace cai::jinja {

std::u32string utf8_decode(std::string_view s) {
  std::u32string out;
  out.reserve(s.size());
  std::size_t i = 0;
  while (i < s.size()) {
    auto b = static_cast<unsigned char>(s[i]);
    int n_extra = b < 0x80 ? 0 : (b >> 5) == 0x6 ? 1 : (b >> 4) == 0xE ? 2 : (b >> 3) == 0x1E ? 3 : -1;
    char32_t cp = n_extra == 0 ? b : n_extra == 1 ? (b & 0x1F) : n_extra == 2 ? (b & 0x0F) : (b & 0x07);
    bool ok = n_extra >= 0 && i + static_cast<std::size_t>(n_extra) < s.size();
    for (int k = 1; ok && k <= n_extra; ++k) {
      auto c = static_cast<unsigned char>(s[i + k]);
      if ((c & 0xC0) != 0x80) ok = false;
      cp = (cp << 6) | (c & 0x3F);
    }
    if (!ok) {
      out.push_back(0xFFFD);
      ++i;
      continue;
    }
    out.push_back(cp);
    i += n_extra + 1;
  }
  return out;
}

std::string utf8_encode(std::u32string_view s) {
  std::string out;
  out.reserve(s.size());
  for (char32_t c : s) tok::append_utf8(out, static_cast<uint32_t>(c));
  return out;
}

std::size_t utf8_length(std::string_view s) {
  std::size_t n = 0;
  for (char c : s) n += (static_cast<unsigned char>(c) & 0xC0) != 0x80;
  return n;
}

bool py_isspace(char32_t c) {
  return (c >= 0x09 && c <= 0x0D) || (c >= 0x1C && c <= 0x20) || c == 0x85 || c == 0xA0 || c == 0x1680 ||
         (c >= 0x2000 && c <= 0x200A) || c == 0x2028 || c == 0x2029 || c == 0x202F || c == 0x205F || c == 0x3000;
}

std::string py_strip(std::string_view s, const std::optional<std::string>& chars, StripSide side) {
  std::u32string u = utf8_decode(s);
  std::u32string set = chars ? utf8_decode(*chars) : std::u32string();
  auto strippable = [&](char32_t c) { return chars ? set.find(c) != std::u32string::npos : py_isspace(c); };
  std::size_t b = 0, e = u.size();
  if (side != StripSide::kRight) {
    while (b < e && strippable(u[b])) ++b;
  }
  if (side != StripSide::kLeft) {
    while (e > b && strippable(u[e - 1])) --e;
  }
  return utf8_encode(std::u32string_view(u).substr(b, e - b));
}

std::vector<std::string> py_split(std::string_view s, const std::optional<std::string>& sep, std::int64_t maxsplit) {
  std::vector<std::string> out;
  if (sep) {
    std::size_t pos = 0;
    while (maxsplit < 0 || static_cast<std::int64_t>(out.size()) < maxsplit) {
      std::size_t hit = s.find(*sep, pos);
      if (hit == std::string_view::npos) break;
      out.emplace_back(s.substr(pos, hit - pos));
      pos = hit + sep->size();
    }
    out.emplace_back(s.substr(pos));
    return out;
  }
  std::u32string u = utf8_decode(s);
  std::size_t i = 0;
  while (true) {
    while (i < u.size() && py_isspace(u[i])) ++i;
    if (i == u.size()) break;
    if (maxsplit >= 0 && static_cast<std::int64_t>(out.size()) == maxsplit) {
      out.push_back(utf8_encode(std::u32string_view(u).substr(i)));  // the rest keeps its trailing space
      break;
    }
    std::size_t j = i;
    while (j < u.size() && !py_isspace(u[j])) ++j;
    out.push_back(utf8_encode(std::u32string_view(u).substr(i, j - i)));
    i = j;
  }
  return out;
}

std::vector<std::string> py_splitlines(std::string_view s) {
  std::u32string u = utf8_decode(s);
  std::vector<std::string> out;
  std::size_t start = 0, i = 0;
  auto is_break = [](char32_t c) {
    return c == '\n' || c == '\r' || c == 0x0B || c == 0x0C || (c >= 0x1C && c <= 0x1E) || c == 0x85 || c == 0x2028 ||
           c == 0x2029;
  };
  while (i < u.size()) {
    if (!is_break(u[i])) {
      ++i;
      continue;
    }
    out.push_back(utf8_encode(std::u32string_view(u).substr(start, i - start)));
    i += (u[i] == '\r' && i + 1 < u.size() && u[i + 1] == '\n') ? 2 : 1;
    start = i;
  }
  if (start < u.size()) out.push_back(utf8_encode(std::u32string_view(u).substr(start)));
  return out;
}

std::optional<std::string> py_replace(std::string_view s, std::string_view old_s, std::string_view new_s,
                                      std::int64_t count, std::size_t limit) {
  std::string out;
  std::int64_t n_done = 0;
  auto room = [&] { return out.size() <= limit; };
  if (old_s.empty()) {  // Python inserts `new` before every code point and at the end
    std::u32string u = utf8_decode(s);
    for (char32_t c : u) {
      if (count < 0 || n_done < count) {
        out += new_s;
        ++n_done;
      }
      out += utf8_encode(std::u32string_view(&c, 1));
      if (!room()) return std::nullopt;
    }
    if (count < 0 || n_done < count) out += new_s;
    return room() ? std::optional<std::string>(out) : std::nullopt;
  }
  std::size_t pos = 0;
  while (count < 0 || n_done < count) {
    std::size_t hit = s.find(old_s, pos);
    if (hit == std::string_view::npos) break;
    out.append(s.substr(pos, hit - pos));
    out.append(new_s);
    if (!room()) return std::nullopt;
    pos = hit + old_s.size();
    ++n_done;
  }
  out.append(s.substr(pos));
  return room() ? std::optional<std::string>(out) : std::nullopt;
}

std::string py_upper(std::string_view s) {
  std::string out(s);
  for (char& c : out) {
    if (c >= 'a' && c <= 'z') c = static_cast<char>(c - 'a' + 'A');
  }
  return out;
}

std::string py_lower(std::string_view s) {
  std::string out(s);
  for (char& c : out) {
    if (c >= 'A' && c <= 'Z') c = static_cast<char>(c - 'A' + 'a');
  }
  return out;
}

static bool is_alpha(char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z'); }

std::string py_title(std::string_view s) {
  std::string out(s);
  bool prev_cased = false;
  for (char& c : out) {
    if (is_alpha(c)) {
      std::string one(1, c);
      c = (prev_cased ? py_lower(one) : py_upper(one))[0];
      prev_cased = true;
    } else {
      prev_cased = false;
    }
  }
  return out;
}

std::string py_capitalize(std::string_view s) {
  std::string out = py_lower(s);
  if (!out.empty() && out[0] >= 'a' && out[0] <= 'z') out[0] = static_cast<char>(out[0] - 'a' + 'A');
  return out;
}

std::string py_repr_string(std::string_view s) {
  bool has_single = s.find('\'') != std::string_view::npos;
  bool has_double = s.find('"') != std::string_view::npos;
  char quote = has_single && !has_double ? '"' : '\'';
  std::string out(1, quote);
  for (char c : s) {
    auto b = static_cast<unsigned char>(c);
    if (c == quote || c == '\\') {
      out.push_back('\\');
      out.push_back(c);
    } else if (c == '\n') {
      out += "\\n";
    } else if (c == '\r') {
      out += "\\r";
    } else if (c == '\t') {
      out += "\\t";
    } else if (b < 0x20 || b == 0x7F) {
      char buf[8];
      std::snprintf(buf, sizeof(buf), "\\x%02x", b);
      out += buf;
    } else {
      out.push_back(c);
    }
  }
  out.push_back(quote);
  return out;
}

std::string py_repr_float(double v) {
  if (std::isnan(v)) return "nan";
  if (std::isinf(v)) return v < 0 ? "-inf" : "inf";
  char buf[64];
  auto res = std::to_chars(buf, buf + sizeof(buf), v, std::chars_format::scientific);
  std::string sci(buf, res.ptr);  // e.g. "-1.2345e+02" with the shortest round-trip digits
  std::string sign;
  if (sci[0] == '-') {
    sign = "-";
    sci.erase(0, 1);
  }
  std::size_t e_pos = sci.find('e');
  int exp = std::atoi(sci.c_str() + e_pos + 1);
  std::string digits;
  for (std::size_t i = 0; i < e_pos; ++i) {
    if (sci[i] != '.') digits.push_back(sci[i]);
  }
  auto n_digits = static_cast<int>(digits.size());
  if (exp < -4 || exp >= 16) {
    std::string mant = digits.substr(0, 1);
    if (n_digits > 1) mant += "." + digits.substr(1);
    char ebuf[16];
    std::snprintf(ebuf, sizeof(ebuf), "e%c%02d", exp < 0 ? '-' : '+', std::abs(exp));
    return sign + mant + ebuf;
  }
  std::string out;
  if (exp < 0) {
    out = "0." + std::string(static_cast<std::size_t>(-exp - 1), '0') + digits;
  } else if (n_digits <= exp + 1) {
    out = digits + std::string(static_cast<std::size_t>(exp + 1 - n_digits), '0') + ".0";
  } else {
    out = digits.substr(0, static_cast<std::size_t>(exp + 1)) + "." + digits.substr(static_cast<std::size_t>(exp + 1));
  }
  return sign + out;
}

std::string json_quote(std::string_view s) {
  std::string out = "\"";
  for (char c : s) {
    switch (c) {
      case '"': out += "\\\""; break;
      case '\\': out += "\\\\"; break;
      case '\n': out += "\\n"; break;
      case '\r': out += "\\r"; break;
      case '\t': out += "\\t"; break;
      case '\b': out += "\\b"; break;
      case '\f': out += "\\f"; break;
      default:
        if (static_cast<unsigned char>(c) < 0x20) {
          char buf[8];
          std::snprintf(buf, sizeof(buf), "\\u%04x", static_cast<unsigned char>(c));
          out += buf;
        } else {
          out.push_back(c);
        }
    }
  }
  out.push_back('"');
  return out;
}

}  // namespace cai::jinja
