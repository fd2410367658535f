// The string `format`s the grammar enforces, each written as a pattern (regex.h) and compiled once. Each pattern
// matches a subset of the strings its format allows (e.g. "Z" and "T" in upper case only), which is all a generator
// needs; the other formats are annotations.
#include <map>
#include <string>

#include "runtime/grammar/string_formats.h"

namespace cai::grammar {

namespace {
namespace formats {

// RFC 3339 full-date, with the month's length and leap years (divisible by 4, centuries by 400).
constexpr std::string_view kDate =
    "(\\d{4}-(0[13578]|1[02])-(0[1-9]|[12]\\d|3[01])"
    "|\\d{4}-(0[469]|11)-(0[1-9]|[12]\\d|30)"
    "|\\d{4}-02-(0[1-9]|1\\d|2[0-8])"
    "|(\\d\\d(0[48]|[2468][048]|[13579][26])|(0[048]|[2468][048]|[13579][26])00)-02-29)";
// RFC 3339 full-time: hours, minutes, seconds, an optional fraction and a zone (Z or an offset).
constexpr std::string_view kTime = "([01]\\d|2[0-3]):[0-5]\\d:[0-5]\\d(\\.\\d{1,9})?(Z|[+-]([01]\\d|2[0-3]):[0-5]\\d)";
// A DNS label (RFC 1123): letters, digits and inner hyphens, at most 63 characters.
constexpr std::string_view kLabel = "[A-Za-z0-9]([A-Za-z0-9-]{0,61}[A-Za-z0-9])?";
// Characters a URI path segment may hold as they are (RFC 3986 pchar without percent-encoding), and its escapes.
constexpr std::string_view kPchar = "([A-Za-z0-9._~!$&'()*+,;=:@-]|%[0-9A-Fa-f]{2})";
constexpr std::string_view kOctet = "(25[0-5]|2[0-4]\\d|1\\d\\d|[1-9]?\\d)";

std::string cat(std::initializer_list<std::string_view> parts) {
  std::string s;
  for (std::string_view p : parts) s += p;
  return s;
}

// name → the pattern of the whole string.
std::map<std::string, std::string, std::less<>> patterns() {
  const std::string segment = cat({kPchar, "*"});
  const std::string query = cat({"(", kPchar, "|[/?])*"});
  return {
      {"date", cat({"^", kDate, "$"})},
      {"time", cat({"^", kTime, "$"})},
      {"date-time", cat({"^", kDate, "T", kTime, "$"})},
      // ISO 8601 durations as RFC 3339 appendix A writes them: P, then weeks alone or Y M D and a T part.
      {"duration", "^P(?!$)((\\d+Y)?(\\d+M)?(\\d+D)?(T(?=\\d)(\\d+H)?(\\d+M)?(\\d+S)?)?|\\d+W)$"},
      {"uuid", "^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$"},
      // local@domain: dot-separated atoms of letters, digits and _%+-; a domain of labels ending in a letters-only
      // top-level label.
      {"email", cat({"^[A-Za-z0-9_%+-]+(\\.[A-Za-z0-9_%+-]+)*@(", kLabel, "\\.)+[A-Za-z]{2,63}$"})},
      {"hostname", cat({"^", kLabel, "(\\.", kLabel, ")*$"})},
      {"ipv4", cat({"^(", kOctet, "\\.){3}", kOctet, "$"})},
      {"ipv6", "^([0-9a-fA-F]{1,4}:){7}[0-9a-fA-F]{1,4}$"},  // the full form, without "::"
      // scheme ":" then "//" host [":" port] path, or a path that does not start with "//"; query and fragment.
      {"uri", cat({"^[A-Za-z][A-Za-z0-9+.-]*:(//([A-Za-z0-9._~!$&'()*+,;=-]|%[0-9A-Fa-f]{2})*(:\\d*)?(/", segment,
                   ")*|/?(", kPchar, "+(/", segment, ")*)?)(\\?", query, ")?(#", query, ")?$"})},
  };
}

}  // namespace formats
}  // namespace

std::shared_ptr<const ContentDfa> format_automaton(std::string_view format) {
  // Compiled on first use, once (the compilation is deterministic; an error here is a bug in the table above).
  static const auto table = [] {
    std::map<std::string, std::shared_ptr<const ContentDfa>, std::less<>> compiled;
    for (const auto& [name, pattern] : formats::patterns()) {
      Result<ContentDfa> dfa = compile_regex(pattern);
      if (dfa.ok()) compiled.emplace(name, std::make_shared<const ContentDfa>(std::move(dfa).value()));
    }
    return compiled;
  }();
  auto it = table.find(format);
  return it == table.end() ? nullptr : it->second;
}

bool format_enforced(std::string_view format) { return format_automaton(format) != nullptr; }

}  // namespace cai::grammar
