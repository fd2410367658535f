// Grammar → NFA program (Thompson construction with call edges for any-JSON values), and the lazy subset
// construction over call stacks that turns it into a DFA one byte at a time.
#include "runtime/grammar/byte_dfa.h"

#include <algorithm>
#include <set>

#include "runtime/grammar/char_automaton.h"
#include "runtime/grammar/grammar_node.h"
#include "runtime/grammar/json_grammar.h"

namespace cai::grammar {

namespace {

class ProgramBuilder {
 public:
  // Rule 0 from `root`; false when the program grew past kMaxProgramNodes.
  bool build(const Node& root) {
    p_.rule_starts.push_back(new_node());
    if (!emit_rule(root, p_.rule_starts[0])) return false;
    // Rule 1 (any JSON value) is emitted only when some kJsonValue node called it.
    if (p_.rule_starts.size() > 1) {
      static const Grammar kValue = any_json_value_body();
      if (!emit_rule(*kValue.root(), p_.rule_starts[1])) return false;
    }
    return true;
  }
  Program take() { return std::move(p_); }

 private:
  // The body of the any-value rule: one JSON value whose nested values call the rule again.
  static Grammar any_json_value_body() {
    const Grammar value = Grammar::json_value();  // a call back into this rule
    return Grammar::alternatives({any_json_object(value), json_array(value), json_string(), json_number(),
                                  Grammar::literal("true"), Grammar::literal("false"), Grammar::literal("null")});
  }

  bool emit_rule(const Node& root, int32_t start) {
    const int32_t end = emit(root, start);
    if (end < 0) return false;
    p_.nodes[static_cast<size_t>(end)].rule_end = true;
    return true;
  }

  int32_t new_node() {
    if (p_.nodes.size() >= kMaxProgramNodes) return -1;
    p_.nodes.emplace_back();
    return static_cast<int32_t>(p_.nodes.size() - 1);
  }
  NfaNode& at(int32_t i) { return p_.nodes[static_cast<size_t>(i)]; }

  // Appends the automaton of `n` starting at node `from`; returns its exit node (-1: too large).
  int32_t emit(const Node& n, int32_t from) {
    switch (n.kind) {
      case Node::Kind::kLiteral: {
        int32_t cur = from;
        for (char c : n.text) {
          const int32_t next = new_node();
          if (next < 0) return -1;
          const auto b = static_cast<unsigned char>(c);
          at(cur).bytes.push_back({b, b, next});
          cur = next;
        }
        return cur;
      }
      case Node::Kind::kByteSet: {
        const int32_t next = new_node();
        if (next < 0) return -1;
        for (int lo = 0; lo < 256;) {  // one edge per run of consecutive bytes
          if (!n.bytes.test(static_cast<size_t>(lo))) {
            ++lo;
            continue;
          }
          int hi = lo;
          while (hi + 1 < 256 && n.bytes.test(static_cast<size_t>(hi + 1))) ++hi;
          at(from).bytes.push_back({static_cast<unsigned char>(lo), static_cast<unsigned char>(hi), next});
          lo = hi + 1;
        }
        return next;
      }
      case Node::Kind::kSequence: {
        int32_t cur = from;
        for (const auto& c : n.children)
          if ((cur = emit(*c, cur)) < 0) return -1;
        return cur;
      }
      case Node::Kind::kAlternative: {
        const int32_t exit = new_node();
        if (exit < 0) return -1;
        for (const auto& c : n.children) {
          const int32_t begin = new_node();
          if (begin < 0) return -1;
          at(from).epsilon.push_back(begin);
          const int32_t end = emit(*c, begin);
          if (end < 0) return -1;
          at(end).epsilon.push_back(exit);
        }
        return exit;
      }
      case Node::Kind::kRepeat: return emit_repeat(n, from);
      case Node::Kind::kAutomaton: return emit_automaton(*n.automaton, from);
      case Node::Kind::kJsonValue: {
        if (p_.rule_starts.size() < 2) {
          const int32_t start = new_node();
          if (start < 0) return -1;
          p_.rule_starts.push_back(start);
        }
        // A node holds one call: a fresh node carries it, so `from` may have other edges.
        const int32_t call = new_node();
        const int32_t ret = call < 0 ? -1 : new_node();
        if (ret < 0) return -1;
        at(from).epsilon.push_back(call);
        at(call).call_rule = 1;
        at(call).call_return = ret;
        return ret;
      }
    }
    return -1;
  }

  // One node per DFA state (a fresh entry, as the start state may be re-entered), accepting states → the exit.
  int32_t emit_automaton(const ContentDfa& dfa, int32_t from) {
    const int32_t exit = new_node();
    if (exit < 0) return -1;
    const auto base = static_cast<int32_t>(p_.nodes.size());
    for (size_t i = 0; i < dfa.states.size(); ++i)
      if (new_node() < 0) return -1;
    if (!dfa.empty()) at(from).epsilon.push_back(base);
    for (size_t i = 0; i < dfa.states.size(); ++i) {
      for (const RangeEdge& e : dfa.states[i].edges)
        at(base + static_cast<int32_t>(i)).bytes.push_back({e.lo, e.hi, base + e.target});
      if (dfa.states[i].accepting) at(base + static_cast<int32_t>(i)).epsilon.push_back(exit);
    }
    return exit;
  }

  int32_t emit_repeat(const Node& n, int32_t from) {
    const Node& item = *n.children[0];
    const Node* sep = n.children.size() > 1 ? n.children[1].get() : nullptr;
    const int32_t exit = new_node();
    if (exit < 0) return -1;
    if (n.min == 0) at(from).epsilon.push_back(exit);
    if (n.max == 0) return exit;
    // `next_item` emits (separator) item after `cur`; the first item has no separator.
    auto next_item = [&](int32_t cur, bool first) -> int32_t {
      const int32_t begin = new_node();  // a fresh entry keeps call nodes and loops apart
      if (begin < 0) return -1;
      at(cur).epsilon.push_back(begin);
      int32_t c = begin;
      if (!first && sep && (c = emit(*sep, c)) < 0) return -1;
      return emit(item, c);
    };
    int32_t cur = next_item(from, true);
    if (cur < 0) return -1;
    int count = 1;
    for (; count < n.min; ++count)
      if ((cur = next_item(cur, false)) < 0) return -1;
    if (n.max < 0) {
      const int32_t again = next_item(cur, false);
      if (again < 0) return -1;
      at(again).epsilon.push_back(cur);
      at(cur).epsilon.push_back(exit);
      return exit;
    }
    at(cur).epsilon.push_back(exit);
    for (; count < n.max; ++count) {
      if ((cur = next_item(cur, false)) < 0) return -1;
      at(cur).epsilon.push_back(exit);
    }
    return exit;
  }

  Program p_;
};

}  // namespace

std::optional<Program> compile_program(const Grammar& g) {
  ProgramBuilder b;
  if (!b.build(*g.root())) return std::nullopt;
  return b.take();
}

ByteDfa::ByteDfa(Program program) : program_(std::move(program)) {
  if (close_and_intern({Stack{program_.rule_starts[0]}}) == kDead) {  // an empty language: a state with no way on
    states_.emplace_back();
    next_.assign(256, kDead);
  }
}

int32_t ByteDfa::build_step(int32_t state, unsigned char b) {
  std::vector<Stack> seeds;
  for (const Stack& s : states_[static_cast<size_t>(state)].stacks)
    for (const NfaNode::ByteEdge& e : program_.nodes[static_cast<size_t>(s.back())].bytes)
      if (e.lo <= b && b <= e.hi) {
        seeds.push_back(s);
        seeds.back().back() = e.target;
      }
  if (seeds.empty()) return kDead;
  return close_and_intern(std::move(seeds));
}

int32_t ByteDfa::close_and_intern(std::vector<Stack> seeds) {
  std::set<Stack> seen;
  std::vector<Stack> kept;
  bool accepting = false;
  std::vector<Stack> todo = std::move(seeds);
  while (!todo.empty()) {
    Stack s = std::move(todo.back());
    todo.pop_back();
    if (!seen.insert(s).second) continue;
    const NfaNode& n = program_.nodes[static_cast<size_t>(s.back())];
    if (!n.bytes.empty()) kept.push_back(s);
    if (n.rule_end) {
      if (s.size() == 1) {
        accepting = true;
      } else {
        Stack up = s;
        up.pop_back();
        todo.push_back(std::move(up));
      }
    }
    if (n.call_rule >= 0 && s.size() <= static_cast<size_t>(kMaxJsonDepth)) {
      Stack down = s;
      down.back() = n.call_return;
      down.push_back(program_.rule_starts[static_cast<size_t>(n.call_rule)]);
      todo.push_back(std::move(down));
    }
    for (int32_t e : n.epsilon) {
      Stack next = s;
      next.back() = e;
      todo.push_back(std::move(next));
    }
  }
  std::sort(kept.begin(), kept.end());
  if (kept.empty() && !accepting) return kDead;
  std::string key(accepting ? "A" : "-");
  for (const Stack& s : kept) {
    key.append(reinterpret_cast<const char*>(s.data()), s.size() * sizeof(int32_t));
    key.append(4, '\xff');  // -1: end of this stack
  }
  auto [it, inserted] = ids_.try_emplace(std::move(key), static_cast<int32_t>(states_.size()));
  if (inserted) {
    State& st = states_.emplace_back();
    st.stacks = std::move(kept);
    st.accepting = accepting;
    next_.resize(next_.size() + 256, kUnknown);
  }
  return it->second;
}

}  // namespace cai::grammar
