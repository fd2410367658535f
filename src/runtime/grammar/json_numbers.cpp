// JSON numbers as grammars: integers and decimals, unbounded or between exact bounds (digit-by-digit comparison
// with the bounds' decimal spelling, so no value outside the range can be written).
#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdlib>
#include <string>

#include "runtime/grammar/grammar_node.h"
#include "runtime/grammar/json_grammar.h"

namespace cai::grammar {

namespace {
namespace numbers {

constexpr int kMaxDigits = 16;  // most digits an integer part (or a fraction) may have

Grammar lit(std::string_view s) { return Grammar::literal(s); }
Grammar seq(std::vector<Grammar> parts) { return Grammar::sequence(std::move(parts)); }
Grammar alt(std::vector<Grammar> options) { return Grammar::alternatives(std::move(options)); }
Grammar digit() { return byte_range('0', '9'); }
Grammar digits(int min, int max) { return repeat(digit(), min, max); }
Grammar digit_range(char lo, char hi) {
  return byte_range(static_cast<unsigned char>(lo), static_cast<unsigned char>(hi));
}

// Decimal digit strings d of equal length with lo <= d <= hi (digit by digit; linear in the length).
Grammar digits_between(std::string_view lo, std::string_view hi) {
  const int n = static_cast<int>(lo.size());
  if (lo.find_first_not_of('0') == std::string_view::npos && hi.find_first_not_of('9') == std::string_view::npos)
    return digits(n, n);
  if (n == 1) return digit_range(lo[0], hi[0]);
  if (lo[0] == hi[0]) return seq({lit(lo.substr(0, 1)), digits_between(lo.substr(1), hi.substr(1))});
  const std::string nines(lo.size() - 1, '9'), zeros(lo.size() - 1, '0');
  std::vector<Grammar> options{seq({lit(lo.substr(0, 1)), digits_between(lo.substr(1), nines)})};
  if (lo[0] + 1 <= hi[0] - 1)
    options.push_back(
        seq({digit_range(static_cast<char>(lo[0] + 1), static_cast<char>(hi[0] - 1)), digits(n - 1, n - 1)}));
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
  Grammar same_length = digits_between(a, std::string(a.size(), '9'));
  if (static_cast<int>(a.size()) >= kMaxDigits) return same_length;
  const int more = static_cast<int>(a.size());  // digits after the leading one in the longer numbers
  return alt({same_length, seq({digit_range('1', '9'), digits(more, kMaxDigits - 1)})});
}

Grammar unsigned_any() { return alt({lit("0"), seq({digit_range('1', '9'), digits(0, kMaxDigits - 1)})}); }

// "." and 1..kMaxDigits digits, or nothing.
Grammar any_fraction() { return Grammar::optional(seq({lit("."), digits(1, kMaxDigits)})); }

// Fraction digits (what follows the '.') that agree with `t` (a fraction without trailing zeros) in their first `i`
// digits, and whose value is above t (`above`) or below it, t itself included when `inclusive`. Those digits are
// already written: this is what may follow them (the end, when at least one digit was written).
std::optional<Grammar> fraction_digits(std::string_view t, size_t i, bool above, bool inclusive) {
  const int left = kMaxDigits - static_cast<int>(i);
  std::vector<Grammar> options;
  // Ending here gives t's value when t has no more digits, less than t otherwise.
  if (i > 0 && (i >= t.size() ? inclusive : !above)) options.push_back(lit(""));
  if (left > 0) {
    if (above && inclusive && i >= t.size()) {
      options.push_back(digits(1, left));  // equal so far: nothing more can go below t
    } else {
      const char ti = i < t.size() ? t[i] : '0';
      if (above && ti < '9') options.push_back(seq({digit_range(static_cast<char>(ti + 1), '9'), digits(0, left - 1)}));
      if (!above && ti > '0')
        options.push_back(seq({digit_range('0', static_cast<char>(ti - 1)), digits(0, left - 1)}));
      if (std::optional<Grammar> tie = fraction_digits(t, i + 1, above, inclusive))
        options.push_back(seq({lit(std::string(1, ti)), *tie}));
    }
  }
  if (options.empty()) return std::nullopt;
  return alt(std::move(options));
}

// Fraction digits that agree with both `a` and `b` (a < b) in their first `i` digits, then stay within [a, b]
// (the ends as `a_in` and `b_in` say).
std::optional<Grammar> fraction_digits_between(std::string_view a, std::string_view b, size_t i, bool a_in, bool b_in) {
  const int left = kMaxDigits - static_cast<int>(i);
  std::vector<Grammar> options;
  // Ending here: equal to a when a has no more digits (b, larger, still has some).
  if (i > 0 && i >= a.size() && a_in) options.push_back(lit(""));
  if (left > 0) {
    const char ai = i < a.size() ? a[i] : '0', bi = i < b.size() ? b[i] : '0';
    if (ai == bi) {
      if (std::optional<Grammar> tie = fraction_digits_between(a, b, i + 1, a_in, b_in))
        options.push_back(seq({lit(std::string(1, ai)), *tie}));
    } else {
      if (std::optional<Grammar> up = fraction_digits(a, i + 1, true, a_in))
        options.push_back(seq({lit(std::string(1, ai)), *up}));
      if (ai + 1 <= bi - 1)
        options.push_back(
            seq({digit_range(static_cast<char>(ai + 1), static_cast<char>(bi - 1)), digits(0, left - 1)}));
      if (std::optional<Grammar> down = fraction_digits(b, i + 1, false, b_in))
        options.push_back(seq({lit(std::string(1, bi)), *down}));
    }
  }
  if (options.empty()) return std::nullopt;
  return alt(std::move(options));
}

// An optional fraction ("" or "." digits) above / below `t` as fraction_digits says.
std::optional<Grammar> fraction_part(std::string_view t, bool above, bool inclusive) {
  std::vector<Grammar> options;
  // No fraction is the value 0.
  if (above ? t.empty() && inclusive : !t.empty() || inclusive) options.push_back(lit(""));
  if (std::optional<Grammar> d = fraction_digits(t, 0, above, inclusive)) options.push_back(seq({lit("."), *d}));
  if (options.empty()) return std::nullopt;
  return alt(std::move(options));
}

// An optional fraction within [a, b] (a <= b as fractions).
std::optional<Grammar> fraction_part_between(std::string_view a, std::string_view b, bool a_in, bool b_in) {
  if (a == b) {  // one value, its fraction spelled with any number of trailing zeros
    if (!a_in || !b_in) return std::nullopt;
    if (a.empty()) return Grammar::optional(seq({lit("."), repeat(lit("0"), 1, kMaxDigits)}));
    if (a.size() > static_cast<size_t>(kMaxDigits)) return std::nullopt;
    return seq({lit("." + std::string(a)), repeat(lit("0"), 0, kMaxDigits - static_cast<int>(a.size()))});
  }
  std::vector<Grammar> options;
  if (a.empty() && a_in) options.push_back(lit(""));
  if (std::optional<Grammar> d = fraction_digits_between(a, b, 0, a_in, b_in)) options.push_back(seq({lit("."), *d}));
  if (options.empty()) return std::nullopt;
  return alt(std::move(options));
}

// Non-negative decimals from `lo` to `hi` (none: no upper bound), both non-negative, integer parts of at most
// kMaxDigits digits.
std::optional<Grammar> magnitude_range(const NumberBound& lo, const std::optional<NumberBound>& hi) {
  if (hi) {
    const int order = compare_decimals(lo.value, hi->value);
    if (order > 0 || (order == 0 && (!lo.inclusive || !hi->inclusive))) return std::nullopt;
  }
  const int64_t lo_int = std::stoll(lo.value.integer);
  std::vector<Grammar> options;
  auto add = [&](int64_t integer, std::optional<Grammar> fraction) {
    if (fraction) options.push_back(seq({lit(std::to_string(integer)), *fraction}));
  };
  if (hi && std::stoll(hi->value.integer) == lo_int) {
    add(lo_int, fraction_part_between(lo.value.fraction, hi->value.fraction, lo.inclusive, hi->inclusive));
  } else {
    add(lo_int, fraction_part(lo.value.fraction, true, lo.inclusive));
    if (!hi) {
      options.push_back(seq({unsigned_at_least(lo_int + 1), any_fraction()}));
    } else {
      const int64_t hi_int = std::stoll(hi->value.integer);
      if (lo_int + 1 <= hi_int - 1) options.push_back(seq({unsigned_between(lo_int + 1, hi_int - 1), any_fraction()}));
      add(hi_int, fraction_part(hi->value.fraction, false, hi->inclusive));
    }
  }
  if (options.empty()) return std::nullopt;
  return alt(std::move(options));
}

Decimal negated(Decimal d) {
  if (d.integer != "0" || !d.fraction.empty()) d.negative = !d.negative;
  return d;
}

// The decimal spelled by `text`, a JSON number (with or without fraction and exponent).
Decimal parse_decimal(std::string_view text) {
  Decimal out;
  size_t i = 0;
  if (i < text.size() && text[i] == '-') {
    out.negative = true;
    ++i;
  }
  std::string all;  // every mantissa digit
  long point = -1;  // digits before the decimal point
  for (; i < text.size() && (std::isdigit(static_cast<unsigned char>(text[i])) || text[i] == '.'); ++i) {
    if (text[i] == '.')
      point = static_cast<long>(all.size());
    else
      all += text[i];
  }
  if (point < 0) point = static_cast<long>(all.size());
  if (i < text.size() && (text[i] == 'e' || text[i] == 'E')) point += std::strtol(text.data() + i + 1, nullptr, 10);
  point = std::clamp<long>(point, -400, 400);  // doubles stay within 1e±330
  if (point <= 0) {
    out.fraction = std::string(static_cast<size_t>(-point), '0') + all;
  } else if (point >= static_cast<long>(all.size())) {
    out.integer = all + std::string(static_cast<size_t>(point) - all.size(), '0');
  } else {
    out.integer = all.substr(0, static_cast<size_t>(point));
    out.fraction = all.substr(static_cast<size_t>(point));
  }
  out.integer.erase(0, std::min(out.integer.find_first_not_of('0'), out.integer.size() - 1));
  if (out.integer.empty()) out.integer = "0";
  out.fraction.erase(out.fraction.find_last_not_of('0') + 1);
  if (out.integer == "0" && out.fraction.empty()) out.negative = false;
  return out;
}

}  // namespace numbers
}  // namespace

Grammar json_integer() { return numbers::seq({Grammar::optional(numbers::lit("-")), numbers::unsigned_any()}); }

Grammar json_number() { return numbers::seq({json_integer(), numbers::any_fraction()}); }

Grammar json_integer_range(std::optional<int64_t> lo, std::optional<int64_t> hi) {
  std::vector<Grammar> options;
  // Negative values: "-" followed by their magnitude in [max(1, -hi), -lo].
  if (!lo || *lo < 0) {
    const int64_t mag_lo = hi && *hi < 0 ? -*hi : 1;
    options.push_back(numbers::seq(
        {numbers::lit("-"), lo ? numbers::unsigned_between(mag_lo, -*lo) : numbers::unsigned_at_least(mag_lo)}));
  }
  // Non-negative values in [max(0, lo), hi].
  if (!hi || *hi >= 0) {
    const int64_t from = lo && *lo > 0 ? *lo : 0;
    options.push_back(hi          ? numbers::unsigned_between(from, *hi)
                      : from == 0 ? numbers::unsigned_any()
                                  : numbers::unsigned_at_least(from));
  }
  return numbers::alt(std::move(options));
}

std::optional<Decimal> decimal_of(const nlohmann::ordered_json& number) {
  if (number.is_number_unsigned()) return numbers::parse_decimal(std::to_string(number.get<uint64_t>()));
  if (number.is_number_integer()) return numbers::parse_decimal(std::to_string(number.get<int64_t>()));
  if (!number.is_number_float() || !std::isfinite(number.get<double>())) return std::nullopt;
  return numbers::parse_decimal(number.dump());
}

int compare_decimals(const Decimal& a, const Decimal& b) {
  if (a.negative != b.negative) return a.negative ? -1 : 1;
  int magnitude = 0;
  if (a.integer.size() != b.integer.size())
    magnitude = a.integer.size() < b.integer.size() ? -1 : 1;
  else if (int c = a.integer.compare(b.integer); c != 0)
    magnitude = c < 0 ? -1 : 1;
  else if (int f = a.fraction.compare(b.fraction); f != 0)  // no trailing zeros: the string order is the value order
    magnitude = f < 0 ? -1 : 1;
  return a.negative ? -magnitude : magnitude;
}

std::optional<Grammar> json_number_range(const std::optional<NumberBound>& lo, const std::optional<NumberBound>& hi) {
  std::vector<Grammar> options;
  // Values >= 0: magnitudes from max(lo, 0) to hi.
  if (!hi || !hi->value.negative) {
    const NumberBound from = lo && !lo->value.negative ? *lo : NumberBound{};
    if (std::optional<Grammar> m = numbers::magnitude_range(from, hi)) options.push_back(*m);
  }
  // Values < 0: "-" and a magnitude above max(0, -hi) (0 itself excluded), up to -lo.
  if (!lo || lo->value.negative) {
    const NumberBound from = hi && hi->value.negative ? NumberBound{numbers::negated(hi->value), hi->inclusive}
                                                      : NumberBound{Decimal{}, false};
    std::optional<NumberBound> to;
    if (lo) to = NumberBound{numbers::negated(lo->value), lo->inclusive};
    if (std::optional<Grammar> m = numbers::magnitude_range(from, to))
      options.push_back(numbers::seq({numbers::lit("-"), *m}));
  }
  if (options.empty()) return std::nullopt;
  return numbers::alt(std::move(options));
}

}  // namespace cai::grammar
