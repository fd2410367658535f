// Grammar builders: each wraps one Node; any JSON object / value are spelled out here once.
#include "runtime/grammar/grammar.h"

#include "runtime/grammar/byte_dfa.h"
#include "runtime/grammar/grammar_node.h"
#include "runtime/grammar/json_grammar.h"

namespace cai::grammar {

Grammar Grammar::literal(std::string_view text) {
  Node n;
  n.kind = Node::Kind::kLiteral;
  n.text = std::string(text);
  return NodeBuilder::wrap(std::move(n));
}

Result<Grammar> Grammar::json_schema(const nlohmann::ordered_json& schema) { return compile_json_schema(schema); }

Result<Grammar> Grammar::json_schema(const nlohmann::json& schema) {
  return compile_json_schema(nlohmann::ordered_json::parse(schema.dump()));
}

Grammar Grammar::json_value() {
  Node n;
  n.kind = Node::Kind::kJsonValue;
  return NodeBuilder::wrap(std::move(n));
}

Grammar Grammar::json_object() { return any_json_object(json_value()); }

Grammar Grammar::sequence(std::vector<Grammar> parts) {
  if (parts.size() == 1) return parts[0];
  Node n;
  n.kind = Node::Kind::kSequence;
  for (Grammar& g : parts) n.children.push_back(g.root());
  return NodeBuilder::wrap(std::move(n));
}

Grammar Grammar::alternatives(std::vector<Grammar> options) {
  if (options.size() == 1) return options[0];
  Node n;
  n.kind = Node::Kind::kAlternative;
  for (Grammar& g : options) n.children.push_back(g.root());
  return NodeBuilder::wrap(std::move(n));
}

Grammar Grammar::one_or_more(Grammar item, std::optional<Grammar> separator) {
  return repeat(std::move(item), 1, -1, std::move(separator));
}

Grammar Grammar::optional(Grammar item) { return repeat(std::move(item), 0, 1); }

bool Grammar::matches(std::string_view text) const {
  std::optional<Program> program = compile_program(*this);
  if (!program) return false;
  ByteDfa dfa(std::move(*program));
  int state = dfa.start();
  for (char c : text) {
    state = dfa.step(state, static_cast<unsigned char>(c));
    if (state < 0) return false;
  }
  return dfa.accepting(state);
}

Grammar byte_range(unsigned char lo, unsigned char hi) {
  std::bitset<256> set;
  for (int b = lo; b <= hi; ++b) set.set(static_cast<size_t>(b));
  return byte_set(set);
}

Grammar byte_set(const std::bitset<256>& set) {
  Node n;
  n.kind = Node::Kind::kByteSet;
  n.bytes = set;
  return NodeBuilder::wrap(std::move(n));
}

Grammar automaton(std::shared_ptr<const ContentDfa> dfa) {
  Node n;
  n.kind = Node::Kind::kAutomaton;
  n.automaton = std::move(dfa);
  return NodeBuilder::wrap(std::move(n));
}

Grammar repeat(Grammar item, int min, int max, std::optional<Grammar> separator) {
  Node n;
  n.kind = Node::Kind::kRepeat;
  n.min = min;
  n.max = max;
  n.children.push_back(item.root());
  if (separator) n.children.push_back(separator->root());
  return NodeBuilder::wrap(std::move(n));
}

}  // namespace cai::grammar
