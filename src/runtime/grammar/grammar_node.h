// The expression tree behind a Grammar, and the builders the schema compiler needs beyond the public API (byte
// sets, bounded repetition, embedded automata).
#pragma once

#include <bitset>
#include <memory>
#include <string>
#include <vector>

#include "runtime/grammar/grammar.h"

namespace cai::grammar {

struct ContentDfa;  // char_automaton.h

struct Node {
  enum class Kind {
    kLiteral,      // the bytes of `text`
    kByteSet,      // one byte from `bytes`
    kSequence,     // children one after another
    kAlternative,  // one of the children
    kRepeat,       // children[0] between min and max times (max < 0: unbounded), children[1] (if any) between items
    kJsonValue,    // any JSON value, nesting bounded by kMaxJsonDepth (a recursive rule in the compiled program)
    kAutomaton,    // a string of `automaton` (a DFA: the contents of a string under `pattern` / `format`)
  };
  Kind kind = Kind::kLiteral;
  std::string text;
  std::bitset<256> bytes;
  std::vector<std::shared_ptr<const Node>> children;
  int min = 0;
  int max = -1;
  std::shared_ptr<const ContentDfa> automaton;
};

struct NodeBuilder {
  static Grammar wrap(Node node) { return Grammar(std::make_shared<const Node>(std::move(node))); }
};

// One byte whose value is in [lo, hi].
Grammar byte_range(unsigned char lo, unsigned char hi);
// One byte from `set`.
Grammar byte_set(const std::bitset<256>& set);
// The strings `dfa` accepts (it must accept at least one).
Grammar automaton(std::shared_ptr<const ContentDfa> dfa);
// `item` between `min` and `max` times (max < 0: no limit), `separator` (if given) between consecutive items.
Grammar repeat(Grammar item, int min, int max, std::optional<Grammar> separator = std::nullopt);

}  // namespace cai::grammar
