// RegexNode → ContentDfa. Each node is compiled in front of its continuation (the automaton of everything that
// follows it up to the end of the string), so that '$' and lookaheads become operations on that continuation: '$'
// keeps it only where it may end at once, (?=X) intersects it with X followed by anything, (?!X) subtracts that.
#include <optional>
#include <string>
#include <vector>

#include "runtime/grammar/regex.h"

namespace cai::grammar {

namespace {
namespace regex_compile {

bool has_lookahead(const RegexNode& n) {
  if (n.kind == RegexNode::Kind::kLookahead) return true;
  for (const RegexNode& c : n.children)
    if (has_lookahead(c)) return true;
  return false;
}

bool consumes_nothing(const RegexNode& n) {
  return n.kind == RegexNode::Kind::kStart || n.kind == RegexNode::Kind::kLookahead;
}

class Compiler {
 public:
  explicit Compiler(std::string_view pattern) : pattern_(pattern) {}

  Result<ContentDfa> run(const RegexNode& root) {
    const int32_t final_state = nfa_.add_state();
    const std::vector<RegexNode> single{root};
    const std::vector<RegexNode>& branches = root.kind == RegexNode::Kind::kAlternative ? root.children : single;
    const int32_t start = nfa_.add_state();
    for (const RegexNode& branch : branches) {
      // A branch that does not start with '^' may begin anywhere: anything comes before it.
      const bool anchored = branch.kind == RegexNode::Kind::kStart ||
                            (branch.kind == RegexNode::Kind::kSequence && !branch.children.empty() &&
                             branch.children[0].kind == RegexNode::Kind::kStart);
      CAI_ASSIGN_OR_RETURN(int32_t b, compile(branch, anything_then(final_state), final_state, anchored));
      nfa_.add_epsilon(start, anchored ? b : anything_then(b));
    }
    return to_dfa(start, final_state);
  }

 private:
  Status too_complex() const {
    return invalid_argument("pattern: too complex to compile (more than {} automaton states): '{}'",
                            kMaxAutomatonStates, pattern_);
  }

  Result<ContentDfa> to_dfa(int32_t start, int32_t accept) {
    std::optional<ContentDfa> dfa = determinize(nfa_, start, accept);
    if (!dfa) return too_complex();
    return std::move(*dfa);
  }

  // A state that reads any characters, then goes on to `next`.
  int32_t anything_then(int32_t next) {
    const int32_t loop = nfa_.add_state();
    nfa_.add_chars(loop, CharSet::any(), loop);
    nfa_.add_epsilon(loop, next);
    return loop;
  }

  // The start of `n` followed by the continuation at `next`; `end` is the state where the string ends, `at_start`
  // whether nothing can have been read before `n`.
  Result<int32_t> compile(const RegexNode& n, int32_t next, int32_t end, bool at_start) {
    if (nfa_.size() > kMaxAutomatonStates) return too_complex();
    switch (n.kind) {
      case RegexNode::Kind::kChars: {
        const int32_t s = nfa_.add_state();
        nfa_.add_chars(s, n.chars, next);
        return s;
      }
      case RegexNode::Kind::kSequence: {
        size_t first_consuming = 0;  // items before it stand at the start too
        while (first_consuming < n.children.size() && consumes_nothing(n.children[first_consuming])) ++first_consuming;
        int32_t cur = next;
        for (size_t i = n.children.size(); i-- > 0;) {
          CAI_ASSIGN_OR_RETURN(cur, compile(n.children[i], cur, end, at_start && i <= first_consuming));
        }
        return cur;
      }
      case RegexNode::Kind::kAlternative: {
        const int32_t s = nfa_.add_state();
        for (const RegexNode& c : n.children) {
          CAI_ASSIGN_OR_RETURN(int32_t b, compile(c, next, end, at_start));
          nfa_.add_epsilon(s, b);
        }
        return s;
      }
      case RegexNode::Kind::kRepeat: return compile_repeat(n, next, end, at_start);
      case RegexNode::Kind::kStart:
        if (!at_start)
          return invalid_argument(
              "pattern: '^' is supported only at the start of the pattern (or of an alternative "
              "at its top level): '{}'",
              pattern_);
        return next;
      case RegexNode::Kind::kEnd: {
        // The string may end here only if the continuation may end without reading more.
        if (nfa_.epsilon_reaches(next, end)) return end;
        return nfa_.add_state();  // no way on
      }
      case RegexNode::Kind::kLookahead: return compile_lookahead(n, next, end, at_start);
    }
    return invalid_argument("pattern: internal error");
  }

  Result<int32_t> compile_repeat(const RegexNode& n, int32_t next, int32_t end, bool at_start) {
    const RegexNode& item = n.children[0];
    int32_t cur = next;
    if (n.max < 0) {
      if (has_lookahead(item))
        return invalid_argument(
            "pattern: a lookahead inside an unbounded repetition ('*', '+', '{{n,}}') is "
            "not supported: '{}'",
            pattern_);
      const int32_t loop = nfa_.add_state();  // item again, or on to next
      nfa_.add_epsilon(loop, next);
      CAI_ASSIGN_OR_RETURN(int32_t again, compile(item, loop, end, false));
      nfa_.add_epsilon(loop, again);
      cur = loop;
    } else {
      // Optional copies from the last: each may be the end of the repetition.
      for (int i = n.min; i < n.max; ++i) {
        const int32_t s = nfa_.add_state();
        nfa_.add_epsilon(s, next);
        CAI_ASSIGN_OR_RETURN(int32_t item_start, compile(item, cur, end, false));
        nfa_.add_epsilon(s, item_start);
        cur = s;
      }
    }
    for (int i = n.min; i-- > 0;) {
      CAI_ASSIGN_OR_RETURN(cur, compile(item, cur, end, at_start && i == 0));
    }
    return cur;
  }

  Result<int32_t> compile_lookahead(const RegexNode& n, int32_t next, int32_t end, bool at_start) {
    // What may follow here, and what the lookahead's body (then anything, unless it ends with '$') matches.
    CAI_ASSIGN_OR_RETURN(ContentDfa rest, to_dfa(next, end));
    const int32_t body_end = nfa_.add_state();
    CAI_ASSIGN_OR_RETURN(int32_t body, compile(n.children[0], anything_then(body_end), body_end, at_start));
    CAI_ASSIGN_OR_RETURN(ContentDfa ahead, to_dfa(body, body_end));
    std::optional<ContentDfa> kept = n.negative ? subtract(rest, ahead) : intersect(rest, ahead);
    if (!kept) return too_complex();
    return nfa_.add_dfa(*kept, end);
  }

  std::string_view pattern_;
  ContentNfa nfa_;
};

}  // namespace regex_compile
}  // namespace

Result<ContentDfa> compile_regex(std::string_view pattern) {
  CAI_ASSIGN_OR_RETURN(RegexNode root, parse_regex(pattern));
  return regex_compile::Compiler(pattern).run(root);
}

}  // namespace cai::grammar
