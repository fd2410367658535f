// Automata over the bytes inside a JSON string (between its quotes): sets of characters spelled as JSON writes them
// (UTF-8, short escapes), an NFA built from them, and DFAs with the operations `pattern` and `format` need.
#pragma once

#include <cstdint>
#include <optional>
#include <string_view>
#include <utility>
#include <vector>

namespace cai::grammar {

// Unicode scalar values as sorted, disjoint, non-adjacent ranges.
class CharSet {
 public:
  CharSet() = default;
  static CharSet range(char32_t lo, char32_t hi);
  // Every scalar value: U+0000..U+10FFFF without the surrogates.
  static CharSet any();
  void add(char32_t lo, char32_t hi);
  void add(const CharSet& other);
  // The values of any() not in this set.
  CharSet complement() const;
  bool empty() const { return ranges_.empty(); }
  const std::vector<std::pair<char32_t, char32_t>>& ranges() const { return ranges_; }

 private:
  std::vector<std::pair<char32_t, char32_t>> ranges_;
};

// A byte-range edge; a state's edges are sorted by `lo` (and disjoint in a DFA).
struct RangeEdge {
  unsigned char lo, hi;
  int32_t target;
};

struct ContentDfa;

// Most states an NFA (ContentNfa) or a DFA (ContentDfa) may grow to before its construction is refused.
inline constexpr size_t kMaxAutomatonStates = 200'000;

// A nondeterministic automaton with byte-range and epsilon edges, grown state by state.
class ContentNfa {
 public:
  struct State {
    std::vector<RangeEdge> edges;
    std::vector<int32_t> epsilon;
  };

  int32_t add_state();
  void add_edge(int32_t from, unsigned char lo, unsigned char hi, int32_t to);
  void add_epsilon(int32_t from, int32_t to) { states_[static_cast<size_t>(from)].epsilon.push_back(to); }
  // Edges from `from` to `to` that spell one character of `set` inside a JSON string: printable ASCII as itself
  // ('"' and '\' escaped, '/' either way), \b \t \n \f \r as short escapes, the rest as UTF-8. Other control
  // characters need \u escapes, which are never produced: they are left out.
  void add_chars(int32_t from, const CharSet& set, int32_t to);
  // A copy of `dfa` whose accepting states lead to `to`; returns the copy's start.
  int32_t add_dfa(const ContentDfa& dfa, int32_t to);
  // Whether `to` is reachable from `from` by epsilon edges alone.
  bool epsilon_reaches(int32_t from, int32_t to) const;
  size_t size() const { return states_.size(); }
  const State& state(int32_t i) const { return states_[static_cast<size_t>(i)]; }

 private:
  // Edges spelling the UTF-8 sequences from `lo` to `hi` (both `n` bytes long, the range in one encoding length).
  void add_utf8(int32_t from, const unsigned char* lo, const unsigned char* hi, int n, int32_t to);
  std::vector<State> states_;
};

// A deterministic automaton in which every state can reach an accepting one (no dead ends); states[0] is the start,
// and no states at all is the empty language.
struct ContentDfa {
  struct State {
    std::vector<RangeEdge> edges;  // sorted, disjoint
    bool accepting = false;
  };
  std::vector<State> states;

  bool empty() const { return states.empty(); }
  // Whether the automaton accepts exactly `bytes`.
  bool matches(std::string_view bytes) const;
};

// The DFA of the strings that lead from `start` to `accept` in `nfa`; nullopt past kMaxAutomatonStates.
std::optional<ContentDfa> determinize(const ContentNfa& nfa, int32_t start, int32_t accept);
// The strings of both / of `a` and not of `b`; nullopt past kMaxAutomatonStates.
std::optional<ContentDfa> intersect(const ContentDfa& a, const ContentDfa& b);
std::optional<ContentDfa> subtract(const ContentDfa& a, const ContentDfa& b);
// The strings of `dfa` that have min_chars..max_chars characters (max_chars < 0: no limit), an escape or a UTF-8
// sequence counting as one; nullopt past kMaxAutomatonStates.
std::optional<ContentDfa> limit_length(const ContentDfa& dfa, int min_chars, int max_chars);

// The fewest and the most bytes an accepted string has (most: -1 when unbounded); {0, 0} for the empty language.
std::pair<int64_t, int64_t> byte_length_bounds(const ContentDfa& dfa);

}  // namespace cai::grammar
