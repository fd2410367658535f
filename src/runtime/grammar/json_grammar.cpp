// JSON's lexical grammar (strings as well-formed UTF-8, integers, numbers, integer ranges) and containers.
#include "runtime/grammar/json_grammar.h"

#include <string>

#include "runtime/grammar/grammar_node.h"

namespace cai::grammar {

namespace {

constexpr int kMaxDigits = 16;  // most digits an integer part (or a fraction) may have

Grammar lit(std::string_view s) { return Grammar::literal(s); }
Grammar seq(std::vector<Grammar> parts) { return Grammar::sequence(std::move(parts)); }
Grammar alt(std::vector<Grammar> options) { return Grammar::alternatives(std::move(options)); }
Grammar digit() { return byte_range('0', '9'); }
Grammar continuation() { return byte_range(0x80, 0xBF); }

// One character inside a JSON string: printable ASCII other than '"' and '\', a short escape, or a well-formed
// UTF-8 sequence of 2 to 4 bytes (no overlongs, no surrogates).
Grammar string_char() {
  std::bitset<256> plain;
  for (int b = 0x20; b <= 0x7F; ++b) plain.set(static_cast<size_t>(b));
  plain.reset('"');
  plain.reset('\\');
  std::bitset<256> escaped;
  for (char c : std::string_view("\"\\/bfnrt")) escaped.set(static_cast<unsigned char>(c));
  const Grammar cont = continuation();
  return alt({byte_set(plain), seq({lit("\\"), byte_set(escaped)}), seq({byte_range(0xC2, 0xDF), cont}),
              seq({lit("\xE0"), byte_range(0xA0, 0xBF), cont}), seq({byte_range(0xE1, 0xEC), cont, cont}),
              seq({lit("\xED"), byte_range(0x80, 0x9F), cont}), seq({byte_range(0xEE, 0xEF), cont, cont}),
              seq({lit("\xF0"), byte_range(0x90, 0xBF), cont, cont}), seq({byte_range(0xF1, 0xF3), cont, cont, cont}),
              seq({lit("\xF4"), byte_range(0x80, 0x8F), cont, cont})});
}

// Decimal digit strings d of equal length with lo <= d <= hi (digit by digit).
Grammar digits_between(std::string_view lo, std::string_view hi) {
  if (lo.size() == 1) return byte_range(static_cast<unsigned char>(lo[0]), static_cast<unsigned char>(hi[0]));
  if (lo[0] == hi[0]) return seq({lit(lo.substr(0, 1)), digits_between(lo.substr(1), hi.substr(1))});
  const std::string nines(lo.size() - 1, '9'), zeros(lo.size() - 1, '0');
  std::vector<Grammar> options{seq({lit(lo.substr(0, 1)), digits_between(lo.substr(1), nines)})};
  if (lo[0] + 1 <= hi[0] - 1)
    options.push_back(seq({byte_range(static_cast<unsigned char>(lo[0] + 1), static_cast<unsigned char>(hi[0] - 1)),
                           repeat(digit(), static_cast<int>(lo.size() - 1), static_cast<int>(lo.size() - 1))}));
  options.push_back(seq({lit(hi.substr(0, 1)), digits_between(zeros, hi.substr(1))}));
  return alt(std::move(options));
}

// Non-negative integers in [lo, hi], written without leading zeros.
Grammar unsigned_between(int64_t lo, int64_t hi) {
  std::vector<Grammar> options;
  int64_t low = lo;
  while (low <= hi) {  // split into runs of equal digit count
    const std::string a = std::to_string(low);
    int64_t top = 9;
    for (size_t i = 1; i < a.size(); ++i) top = top * 10 + 9;
    const int64_t high = std::min(hi, top);
    options.push_back(digits_between(a, std::to_string(high)));
    if (high == hi) break;
    low = high + 1;
  }
  return alt(std::move(options));
}

// Non-negative integers >= lo, up to kMaxDigits digits.
Grammar unsigned_at_least(int64_t lo) {
  const std::string a = std::to_string(lo);
  std::string top(a.size(), '9');
  Grammar same_length = digits_between(a, top);
  if (static_cast<int>(a.size()) >= kMaxDigits) return same_length;
  const int more = static_cast<int>(a.size());  // digits after the leading one in the longer numbers
  return alt({same_length, seq({byte_range('1', '9'), repeat(digit(), more, kMaxDigits - 1)})});
}

Grammar unsigned_any() { return alt({lit("0"), seq({byte_range('1', '9'), repeat(digit(), 0, kMaxDigits - 1)})}); }

}  // namespace

Grammar json_string(int min_length, int max_length) {
  return seq({lit("\""), repeat(string_char(), min_length, max_length), lit("\"")});
}

Grammar json_integer() { return seq({Grammar::optional(lit("-")), unsigned_any()}); }

Grammar json_number() {
  return seq({json_integer(), Grammar::optional(seq({lit("."), repeat(digit(), 1, kMaxDigits)}))});
}

Grammar json_integer_range(std::optional<int64_t> lo, std::optional<int64_t> hi) {
  std::vector<Grammar> options;
  // Negative values: "-" followed by their magnitude in [max(1, -hi), -lo].
  if (!lo || *lo < 0) {
    const int64_t mag_lo = hi && *hi < 0 ? -*hi : 1;
    options.push_back(seq({lit("-"), lo ? unsigned_between(mag_lo, -*lo) : unsigned_at_least(mag_lo)}));
  }
  // Non-negative values in [max(0, lo), hi].
  if (!hi || *hi >= 0) {
    const int64_t from = lo && *lo > 0 ? *lo : 0;
    options.push_back(hi ? unsigned_between(from, *hi) : from == 0 ? unsigned_any() : unsigned_at_least(from));
  }
  return alt(std::move(options));
}

Grammar json_separator(char c) { return seq({lit(std::string(1, c)), Grammar::optional(lit(" "))}); }

Grammar any_json_object(const Grammar& value) {
  const Grammar member = seq({json_string(), json_separator(':'), value});
  return seq({lit("{"), repeat(member, 0, -1, json_separator(',')), lit("}")});
}

Grammar json_array(const Grammar& item, int min_items, int max_items) {
  return seq({lit("["), repeat(item, min_items, max_items, json_separator(',')), lit("]")});
}

}  // namespace cai::grammar
