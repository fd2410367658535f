// Python str semantics on UTF-8 text (strip/split/replace/case, repr, float repr) for the Jinja interpreter.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace cai::jinja {

std::u32string utf8_decode(std::string_view s);  // invalid bytes become U+FFFD
std::string utf8_encode(std::u32string_view s);
std::size_t utf8_length(std::string_view s);  // number of code points

bool py_isspace(char32_t c);  // Python str.isspace for one code point
enum class StripSide { kLeft, kRight, kBoth };
// str.strip(chars): chars == nullopt strips whitespace.
std::string py_strip(std::string_view s, const std::optional<std::string>& chars, StripSide side);
// str.split(sep, maxsplit): sep == nullopt splits on whitespace runs; empty sep is the caller's error.
std::vector<std::string> py_split(std::string_view s, const std::optional<std::string>& sep, std::int64_t maxsplit);
std::vector<std::string> py_splitlines(std::string_view s);
// str.replace(old, new, count); count < 0 = all. `limit` bounds the result size (nullopt when exceeded).
std::optional<std::string> py_replace(std::string_view s, std::string_view old_s, std::string_view new_s,
                                      std::int64_t count, std::size_t limit);
std::string py_upper(std::string_view s);  // ASCII letters only
std::string py_lower(std::string_view s);
std::string py_title(std::string_view s);
std::string py_capitalize(std::string_view s);

std::string py_repr_string(std::string_view s);  // 'abc' / "it's"
std::string py_repr_float(double v);             // 1.0, 0.0001, 1e-05, 1e+20, inf, nan
std::string json_quote(std::string_view s);      // json.dumps(s, ensure_ascii=False)

}  // namespace cai::jinja
