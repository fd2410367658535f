// JSON's lexical grammar for strings (well-formed UTF-8), the separators and the containers; numbers are in
// json_numbers.cpp.
#include "runtime/grammar/json_grammar.h"

#include <string>

#include "runtime/grammar/grammar_node.h"

namespace cai::grammar {

namespace {
namespace lexical {

Grammar lit(std::string_view s) { return Grammar::literal(s); }
Grammar seq(std::vector<Grammar> parts) { return Grammar::sequence(std::move(parts)); }
Grammar alt(std::vector<Grammar> options) { return Grammar::alternatives(std::move(options)); }
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

}  // namespace lexical
}  // namespace

Grammar json_string(int min_length, int max_length) {
  return lexical::seq({lexical::lit("\""), repeat(lexical::string_char(), min_length, max_length), lexical::lit("\"")});
}

Grammar json_separator(char c) {
  return lexical::seq({lexical::lit(std::string(1, c)), Grammar::optional(lexical::lit(" "))});
}

Grammar any_json_object(const Grammar& value) { return json_object_of(json_string(), value); }

Grammar json_object_of(const Grammar& key, const Grammar& value, int min_members, int max_members) {
  const Grammar member = lexical::seq({key, json_separator(':'), value});
  return lexical::seq(
      {lexical::lit("{"), repeat(member, min_members, max_members, json_separator(',')), lexical::lit("}")});
}

Grammar json_array(const Grammar& item, int min_items, int max_items) {
  return lexical::seq({lexical::lit("["), repeat(item, min_items, max_items, json_separator(',')), lexical::lit("]")});
}

}  // namespace cai::grammar
