// JSON Schema numbers and strings as zod 4 and Pydantic v2 write them: integer bounds up to ±(2^53 - 1) checked
// against random ranges, exclusive and decimal bounds checked against every spelling of the numbers in a window,
// formats, patterns (with JSON escaping and lookaheads) and the constructs a pattern may not use.
#include <gtest/gtest.h>

#include <random>
#include <string>
#include <vector>

#include "grammar_test_util.h"
#include "runtime/grammar/grammar.h"

namespace cai::grammar {
namespace {

using test::expect_language;
using test::expect_refused;
using test::schema;

constexpr int64_t kMax = 9'007'199'254'740'991;  // 2^53 - 1

// The JSON spelling of a string.
std::string q(const std::string& s) { return nlohmann::json(s).dump(); }
std::vector<std::string> qs(const std::vector<std::string>& list) {
  std::vector<std::string> out;
  for (const std::string& s : list) out.push_back(q(s));
  return out;
}

TEST(JsonSchemaNumbers, ZodIntegerBoundsAreTheSafeIntegers) {
  const Grammar g = schema(R"({"type": "integer", "minimum": -9007199254740991, "maximum": 9007199254740991})");
  expect_language(
      g, {"0", "-1", "42", "9007199254740991", "-9007199254740991", "9007199254740990", "1000000000000000"},
      {"9007199254740992", "-9007199254740992", "9999999999999999", "10000000000000000", "1.5", "01", "-0", "1e3"});
  // Outward bounds past 2^53 - 1 are pulled in; inward ones are refused by name.
  expect_language(schema(R"({"type": "integer", "minimum": -1e20, "maximum": 5})"), {"-9007199254740991", "5"},
                  {"-9007199254740992", "6"});
  expect_refused(R"({"type": "integer", "exclusiveMaximum": -1e17})", "exclusiveMaximum", "9007199254740991");
}

TEST(JsonSchemaNumbers, RandomIntegerRangesMatchExactlyTheValuesInside) {
  std::mt19937_64 rng(48);
  auto random_value = [&] {  // magnitudes of every digit count, both signs
    const int digits = static_cast<int>(rng() % 16) + 1;
    int64_t v = static_cast<int64_t>(rng() % 9) + 1;
    for (int i = 1; i < digits; ++i) v = v * 10 + static_cast<int64_t>(rng() % 10);
    v = std::min(v, kMax);
    return rng() % 2 ? -v : v;
  };
  for (int round = 0; round < 60; ++round) {
    int64_t lo = random_value(), hi = random_value();
    if (lo > hi) std::swap(lo, hi);
    const bool exclusive = round % 2 == 1;  // the same set through exclusiveMinimum / exclusiveMaximum
    const std::string text = exclusive ? "{\"type\": \"integer\", \"exclusiveMinimum\": " + std::to_string(lo - 1) +
                                             ", \"exclusiveMaximum\": " + std::to_string(hi + 1) + "}"
                                       : "{\"type\": \"integer\", \"minimum\": " + std::to_string(lo) +
                                             ", \"maximum\": " + std::to_string(hi) + "}";
    const Grammar g = schema(text);
    std::vector<int64_t> probes = {lo - 1, lo, lo + 1, hi - 1, hi, hi + 1, 0, 1, -1, kMax, -kMax};
    for (int i = 0; i < 8; ++i) {
      probes.push_back(lo + static_cast<int64_t>(rng() % static_cast<uint64_t>(hi - lo + 1)));
      probes.push_back(random_value());
    }
    for (int64_t p = 1; p <= kMax / 10; p *= 10)
      for (int64_t v : {p - 1, p, -p, 1 - p}) probes.push_back(v);
    for (int64_t v : probes) ASSERT_EQ(g.matches(std::to_string(v)), v >= lo && v <= hi) << text << " value " << v;
  }
}

TEST(JsonSchemaNumbers, ExclusiveAndDecimalBoundsOfIntegers) {
  expect_language(schema(R"({"type": "integer", "exclusiveMinimum": 0})"), {"1", "7", "9007199254740991"},
                  {"0", "-1", "-0"});
  expect_language(schema(R"({"type": "integer", "exclusiveMinimum": 2.5, "exclusiveMaximum": 6})"), {"3", "5"},
                  {"2", "6"});
  // Draft 4 / OpenAPI 3.0: a boolean exclusiveMinimum makes minimum exclusive; the tighter of two bounds wins.
  expect_language(schema(R"({"type": "integer", "minimum": 3, "exclusiveMinimum": true, "maximum": 9,
                             "exclusiveMaximum": 7})"),
                  {"4", "6"}, {"3", "7", "9"});
}

// Every spelling of v / 100 with up to two fraction digits.
std::vector<std::string> spellings(int v) {
  const std::string sign = v < 0 ? "-" : "";
  const std::string whole = sign + std::to_string(std::abs(v) / 100);
  const int f = std::abs(v) % 100;
  if (f == 0) return {whole, whole + ".0", whole + ".00"};
  const std::string two = std::string(1, static_cast<char>('0' + f / 10)) + static_cast<char>('0' + f % 10);
  if (f % 10 == 0) return {whole + "." + two.substr(0, 1), whole + "." + two};
  return {whole + "." + two};
}

TEST(JsonSchemaNumbers, DecimalRangesMatchEverySpellingInside) {
  struct Range {
    const char* schema;
    int lo, hi;  // hundredths; kNone: no bound
    bool lo_in, hi_in;
  };
  constexpr int kNone = 1 << 20;
  const std::vector<Range> ranges = {
      {R"({"type": "number", "exclusiveMinimum": 0})", 0, kNone, false, true},  // zod .positive()
      {R"({"type": "number", "minimum": 0, "maximum": 1})", 0, 100, true, true},
      {R"({"type": "number", "minimum": -2.5, "maximum": 3.25})", -250, 325, true, true},
      {R"({"type": "number", "exclusiveMinimum": -2.5, "exclusiveMaximum": 3.25})", -250, 325, false, false},
      {R"({"type": "number", "maximum": -0.75})", -kNone, -75, true, true},
      {R"({"type": "number", "exclusiveMaximum": 0})", -kNone, 0, true, false},  // zod .negative()
      {R"({"type": "number", "minimum": 0.05, "exclusiveMaximum": 0.1})", 5, 10, true, false},
      {R"({"type": "number", "exclusiveMinimum": 1.25, "maximum": 1.3})", 125, 130, false, true},
      {R"({"type": "number", "minimum": 1.5, "maximum": 1.5})", 150, 150, true, true},
      {R"({"type": "number", "minimum": -1, "exclusiveMaximum": 1e-1})", -100, 10, true, false},
  };
  for (const Range& r : ranges) {
    const Grammar g = schema(r.schema);
    for (int v = -600; v <= 600; ++v) {
      const bool above = r.lo == -kNone || (r.lo_in ? v >= r.lo : v > r.lo);
      const bool below = r.hi == kNone || (r.hi_in ? v <= r.hi : v < r.hi);
      for (const std::string& text : spellings(v))
        ASSERT_EQ(g.matches(text), above && below) << r.schema << " value " << text;
    }
  }
  expect_language(schema(R"({"type": "number", "exclusiveMinimum": 0})"), {"0.0000000000000001", "123456.789"},
                  {"-0", "0.0000000000000000", "1e5"});
}

TEST(JsonSchemaStrings, FormatsAreEnforced) {
  expect_language(schema(R"({"type": "string", "format": "date"})"),
                  qs({"2024-02-29", "2000-02-29", "2023-12-31", "1999-04-30"}),
                  qs({"2023-02-29", "1900-02-29", "2023-13-01", "2023-04-31", "24-01-01", "2023-1-01", ""}));
  expect_language(schema(R"({"type": "string", "format": "date-time"})"),
                  qs({"2024-05-01T12:30:00Z", "2024-05-01T23:59:59.123456+02:00", "1999-12-31T00:00:00-11:30"}),
                  qs({"2024-05-01 12:30:00Z", "2024-05-01T24:00:00Z", "2024-05-01T12:30:00", "2024-05-01"}));
  expect_language(schema(R"({"type": "string", "format": "time"})"), qs({"12:30:00Z", "08:15:00.5+01:00"}),
                  qs({"12:30", "25:00:00Z"}));
  expect_language(schema(R"({"type": "string", "format": "uuid"})"),
                  qs({"123e4567-e89b-12d3-a456-426614174000", "00000000-0000-0000-0000-000000000000"}),
                  qs({"123e4567e89b12d3a456426614174000", "123e4567-e89b-12d3-a456-42661417400g"}));
  expect_language(schema(R"({"type": "string", "format": "email"})"),
                  qs({"jane.doe@example.com", "a+b_c@mail.sub.example.org"}),
                  qs({"jane", "a@b", ".a@example.com", "a..b@example.com", "a@example.c", "a b@example.com"}));
  expect_language(schema(R"({"type": "string", "format": "uri"})"),
                  qs({"https://example.com/a/b?x=1&y=%20#top", "mailto:jane@example.com", "urn:isbn:0451450523"}),
                  qs({"example.com", "https://exa mple.com", "/relative/path", "https://x/#a#b"}));
  expect_language(schema(R"({"type": "string", "format": "ipv4"})"), qs({"192.168.0.1", "0.0.0.0"}),
                  qs({"256.1.1.1", "1.2.3", "01.2.3.4"}));
  expect_language(schema(R"({"type": "string", "format": "hostname"})"), qs({"example.com", "a-b.c"}),
                  qs({"-a.com", "a_b.com", ""}));
  expect_language(schema(R"({"type": "string", "format": "duration"})"), qs({"P1Y2M3DT4H5M6S", "P2W", "PT1H"}),
                  qs({"P", "PT", "P1H", "P1W2D"}));
  // Other formats are annotations: any string.
  expect_language(schema(R"({"type": "string", "format": "password"})"), qs({"", "anything"}), {"1"});
  // A format with a length: Pydantic's AnyUrl.
  expect_language(schema(R"({"type": "string", "format": "uri", "minLength": 1, "maxLength": 2083})"),
                  qs({"https://example.com"}), qs({"", "https://" + std::string(2080, 'a')}));
  expect_language(schema(R"({"type": "string", "format": "email", "maxLength": 10})"), qs({"a@b.co"}),
                  qs({"abcdef@example.com"}));
}

TEST(JsonSchemaStrings, PatternsWithJsonEscaping) {
  expect_language(schema(R"({"type": "string", "pattern": "^[a-z0-9_-]{3,8}$"})"), qs({"abc", "a-b_c9", "abcdefgh"}),
                  qs({"ab", "abcdefghi", "ABC", "a b"}));
  expect_language(schema(R"({"type": "string", "pattern": "^\\d{3}-\\d{4}$"})"), qs({"555-1234"}),
                  qs({"5551234", "555-12345"}));
  expect_language(schema(R"({"type": "string", "pattern": "^(foo|bar)+(?:-\\w{2,})?$"})"),
                  qs({"foo", "barfoo", "foo-x1"}), qs({"", "baz", "foo-x"}));
  expect_language(schema(R"({"type": "string", "pattern": "cat"})"), qs({"cat", "concatenate", "a\ncat"}),
                  qs({"dog", "ca t"}));  // unanchored: anywhere in the string
  expect_language(schema(R"({"type": "string", "pattern": "^a.c$"})"),
                  qs({"abc", "a\"c",
                      "a\xC3\xA9"
                      "c"}),
                  qs({"a\nc", "ac"}));  // '.' is any character but a line break
  expect_language(schema(R"({"type": "string", "pattern": "^[^,]+$"})"), qs({"a;b", "\xE2\x82\xAC", "tab\there"}),
                  qs({"a,b", ""}));
  // Quotes and backslashes in the pattern are the string's characters, written escaped in the JSON.
  expect_language(schema(R"({"type": "string", "pattern": "^\"[a-z]\\\\$"})"), {R"("\"x\\")"},
                  {R"(""x\")", R"("\"x\")"});
  expect_language(schema(R"({"type": "string", "pattern": "^[\\s\\S]*$", "maxLength": 2})"),
                  {R"("\n\t")", "\"\xC3\xA9\xE2\x82\xAC\"", R"("")"}, {R"("abc")"});
  expect_language(schema(R"({"type": "string", "pattern": "^[a-z]*$", "minLength": 3})"), qs({"abc", "abcdef"}),
                  qs({"ab", "ABC"}));
  expect_language(schema(R"({"type": "string", "pattern": "^[\u00e0-\u00fc]+\\u0021?$"})"),
                  qs({"\xC3\xA9\xC3\xA0", "\xC3\xA0!"}), qs({"e", "!"}));
  expect_language(schema(R"({"type": "string", "pattern": "^\\uD83D\\uDE00+$"})"), qs({"\xF0\x9F\x98\x80"}),
                  qs({"\xF0\x9F\x98\x81", ""}));  // a surrogate pair is one character
  expect_language(schema(R"({"type": "string", "pattern": "^x{2}y{1,}z?$"})"), qs({"xxy", "xxyyyz"}),
                  qs({"xy", "xxz", "xxyzz"}));
}

TEST(JsonSchemaStrings, ZodAndPydanticPatterns) {
  // zod 4 .email(): format and a pattern with two lookaheads.
  const std::string email =
      std::string(R"({"type": "string", "format": "email", "pattern": )") + test::kZodEmailPattern + "}";
  expect_language(schema(email), qs({"john.doe@example.com", "a_b+c@sub.example.org"}),
                  qs({".john@example.com", "john..doe@example.com", "john.@example.com", "john@example", "@x.com"}));
  // zod 4 .uuid() and .datetime().
  expect_language(
      schema(std::string(R"({"type": "string", "format": "uuid", "pattern": )") + test::kZodUuidPattern + "}"),
      qs({"123e4567-e89b-42d3-a456-426614174000", "00000000-0000-0000-0000-000000000000"}),
      qs({"123e4567-e89b-02d3-a456-426614174000", "123e4567-e89b-42d3-c456-426614174000"}));
  expect_language(
      schema(std::string(R"({"type": "string", "format": "date-time", "pattern": )") + test::kZodDatetimePattern + "}"),
      qs({"2024-02-29T10:00:00Z", "2023-06-30T23:59:59.5Z"}),
      qs({"2023-02-29T10:00:00Z", "2024-01-01T10:00:00+01:00", "2024-01-01T10:00Z"}));
  // zod 4 base64 and cuid.
  expect_language(schema(R"({"type": "string", "pattern": "^$|^(?:[0-9a-zA-Z+/]{4})*)"
                         R"((?:(?:[0-9a-zA-Z+/]{2}==)|(?:[0-9a-zA-Z+/]{3}=))?$"})"),
                  qs({"", "YWJj", "YQ==", "YWI="}), qs({"YQ=", "abc", "YQ==YQ=="}));
  expect_language(schema(R"({"type": "string", "pattern": "^[cC][^\\s-]{8,}$"})"), qs({"cjld2cjxh0000qzrmn831i7rn"}),
                  qs({"cjld2", "xjld2cjxh0000", "cjld2 cjxh0000"}));
  // zod 4 z.iso.duration(): lookaheads inside an alternative and inside an optional group.
  expect_language(schema(R"({"type": "string", "format": "duration", "pattern": "^P(?:(\\d+W)|(?!.*W)(?=\\d|T\\d))"
                         R"((\\d+Y)?(\\d+M)?(\\d+D)?(T(?=\\d)(\\d+H)?(\\d+M)?(\\d+([.,]\\d+)?S)?)?)$"})"),
                  qs({"P1Y2M", "PT1H", "P2W", "P3DT4H5M6S"}), qs({"P", "PT", "P1W2D", "P1YT"}));
  // Pydantic's Decimal as a string: a lookahead that itself starts with '^'.
  expect_language(schema(R"({"type": "string", "pattern": "^(?!^[-+.]*$)[+-]?0*\\d*\\.?\\d*$"})"),
                  qs({"1.5", "-3", ".5", "007"}), qs({"", "+", "-.", "1.2.3", "abc"}));
}

TEST(JsonSchemaStrings, UnsupportedPatternsAreRefusedByConstruct) {
  const std::vector<std::pair<const char*, const char*>> cases = {
      {R"((a)\\1)", "backreference"},
      {R"((?<=a)b)", "lookbehind"},
      {R"(\\bword)", "word boundary"},
      {R"(^\\p{L}+$)", "Unicode property"},
      {R"(a**)", "nothing to repeat"},
      {R"([z-a])", "out of order"},
      {R"((ab)", "unclosed '('"},
      {R"([ab)", "unclosed '['"},
      {R"(a{3,2})", "n > m"},
      {R"(a^b)", "'^'"},
      {R"(^((?=a)\\w)*$)", "lookahead inside an unbounded repetition"},
      {R"(a{1001})", "above 1000"},
  };
  for (const auto& [pattern, construct] : cases)
    expect_refused(std::string(R"({"type": "string", "pattern": ")") + pattern + "\"}", "pattern", construct);
  expect_refused(R"({"type": "string", "pattern": "^a+$", "maxLength": 0})", "pattern", "no string");
  expect_refused(R"({"type": "string", "format": "date", "pattern": "^x"})", "pattern", "no string");
}

}  // namespace
}  // namespace cai::grammar
