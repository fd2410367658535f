// Program: a Grammar compiled to a byte NFA with call/return edges (the recursion of any-JSON values), and ByteDfa:
// its lazily built deterministic automaton (a state = the set of live call stacks; transitions cached per byte).
#pragma once

#include <cstdint>
#include <deque>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "runtime/grammar/grammar.h"

namespace cai::grammar {

struct NfaNode {
  struct ByteEdge {
    unsigned char lo, hi;
    int32_t target;
  };
  std::vector<ByteEdge> bytes;
  std::vector<int32_t> epsilon;
  int32_t call_rule = -1;  // enter rule `call_rule`, then continue at `call_return`
  int32_t call_return = -1;
  bool rule_end = false;  // end of the rule: return to the caller (or accept, at the outermost level)
};

struct Program {
  std::vector<NfaNode> nodes;
  std::vector<int32_t> rule_starts;  // rule 0 = the grammar; rule 1 (if used) = any JSON value
};

// Most NFA nodes one program may have (a schema whose expansion is larger is refused).
inline constexpr size_t kMaxProgramNodes = 500'000;

// The program of `g`; nullopt when it would exceed kMaxProgramNodes.
std::optional<Program> compile_program(const Grammar& g);

class ByteDfa {
 public:
  static constexpr int32_t kDead = -1;

  explicit ByteDfa(Program program);

  int32_t start() const { return 0; }
  // The state after byte `b` from `state` (kDead when `b` is not allowed there).
  int32_t step(int32_t state, unsigned char b) {
    const size_t at = static_cast<size_t>(state) * 256 + b;
    int32_t next = next_[at];
    if (next == kUnknown) next_[at] = next = build_step(state, b);  // may grow next_: index again
    return next;
  }
  // The bytes so far form a complete sentence.
  bool accepting(int32_t state) const { return states_[static_cast<size_t>(state)].accepting; }
  // Complete, and nothing may follow.
  bool finished(int32_t state) const {
    const State& s = states_[static_cast<size_t>(state)];
    return s.accepting && s.stacks.empty();
  }
  size_t n_states() const { return states_.size(); }

 private:
  static constexpr int32_t kUnknown = -2;
  using Stack = std::vector<int32_t>;  // return nodes…, current node
  struct State {
    std::vector<Stack> stacks;  // sorted; each top node has byte edges
    bool accepting = false;
  };

  int32_t build_step(int32_t state, unsigned char b);
  // Follows epsilon, call and return edges from `seeds`; interns the resulting state.
  int32_t close_and_intern(std::vector<Stack> seeds);

  Program program_;
  std::deque<State> states_;
  std::vector<int32_t> next_;                     // 256 per state: the state after each byte (kUnknown until needed)
  std::unordered_map<std::string, int32_t> ids_;  // serialized stacks → state
};

}  // namespace cai::grammar
