// DFAs over string contents: subset construction from a ContentNfa, trimming of dead ends, products (intersection
// and difference), length limits, and the shortest and longest accepted lengths.
#include <algorithm>
#include <map>
#include <tuple>

#include "runtime/grammar/char_automaton.h"

namespace cai::grammar {

namespace {
namespace dfa_ops {

// Adds edge [lo, hi] → target to `edges`, extending the last edge when it continues it.
void append_edge(std::vector<RangeEdge>& edges, int lo, int hi, int32_t target) {
  if (!edges.empty() && edges.back().target == target && edges.back().hi + 1 == lo) {
    edges.back().hi = static_cast<unsigned char>(hi);
    return;
  }
  edges.push_back({static_cast<unsigned char>(lo), static_cast<unsigned char>(hi), target});
}

// `dfa` without the states that cannot reach an accepting one (or cannot be reached), renumbered from the start.
ContentDfa trim(const ContentDfa& dfa) {
  const size_t n = dfa.states.size();
  std::vector<std::vector<int32_t>> sources(n);
  std::vector<int32_t> todo;
  std::vector<char> alive(n, 0);
  for (size_t s = 0; s < n; ++s) {
    for (const RangeEdge& e : dfa.states[s].edges) sources[static_cast<size_t>(e.target)].push_back(int32_t(s));
    if (dfa.states[s].accepting) {
      alive[s] = 1;
      todo.push_back(static_cast<int32_t>(s));
    }
  }
  while (!todo.empty()) {
    const int32_t s = todo.back();
    todo.pop_back();
    for (int32_t from : sources[static_cast<size_t>(s)])
      if (!alive[static_cast<size_t>(from)]) {
        alive[static_cast<size_t>(from)] = 1;
        todo.push_back(from);
      }
  }
  ContentDfa out;
  if (n == 0 || !alive[0]) return out;
  std::vector<int32_t> id(n, -1);
  std::vector<int32_t> order{0};
  id[0] = 0;
  for (size_t k = 0; k < order.size(); ++k)
    for (const RangeEdge& e : dfa.states[static_cast<size_t>(order[k])].edges)
      if (alive[static_cast<size_t>(e.target)] && id[static_cast<size_t>(e.target)] < 0) {
        id[static_cast<size_t>(e.target)] = static_cast<int32_t>(order.size());
        order.push_back(e.target);
      }
  out.states.resize(order.size());
  for (size_t k = 0; k < order.size(); ++k) {
    const ContentDfa::State& from = dfa.states[static_cast<size_t>(order[k])];
    out.states[k].accepting = from.accepting;
    for (const RangeEdge& e : from.edges)
      if (id[static_cast<size_t>(e.target)] >= 0)
        append_edge(out.states[k].edges, e.lo, e.hi, id[static_cast<size_t>(e.target)]);
  }
  return out;
}

// States of a construction whose states are tuples of `Key`: each key interned once, in order of discovery.
template <class Key>
class StateTable {
 public:
  int32_t intern(const Key& key) {
    auto [it, fresh] = ids_.try_emplace(key, static_cast<int32_t>(keys_.size()));
    if (fresh) keys_.push_back(key);
    return it->second;
  }
  size_t size() const { return keys_.size(); }
  Key key(size_t i) const { return keys_[i]; }

 private:
  std::map<Key, int32_t> ids_;
  std::vector<Key> keys_;
};

// Intersection (`minus` false) or difference (`minus` true) of two DFAs.
std::optional<ContentDfa> product(const ContentDfa& a, const ContentDfa& b, bool minus) {
  if (a.empty()) return ContentDfa{};
  if (b.empty()) return minus ? a : ContentDfa{};
  StateTable<std::pair<int32_t, int32_t>> table;  // (state of a, state of b or -1 once b has no way on)
  table.intern({0, 0});
  ContentDfa out;
  for (size_t k = 0; k < table.size(); ++k) {
    if (table.size() > kMaxAutomatonStates) return std::nullopt;
    const auto [i, j] = table.key(k);
    const ContentDfa::State& sa = a.states[static_cast<size_t>(i)];
    const ContentDfa::State* sb = j >= 0 ? &b.states[static_cast<size_t>(j)] : nullptr;
    std::vector<RangeEdge> edges;
    auto emit = [&](int lo, int hi, int32_t ta, int32_t tb) { append_edge(edges, lo, hi, table.intern({ta, tb})); };
    for (const RangeEdge& x : sa.edges) {
      int c = x.lo;  // the first byte of x not yet covered
      if (sb)
        for (const RangeEdge& y : sb->edges) {
          if (y.hi < c) continue;
          if (y.lo > x.hi) break;
          if (minus && y.lo > c) emit(c, y.lo - 1, x.target, -1);
          const int hi = std::min<int>(x.hi, y.hi);
          emit(std::max<int>(c, y.lo), hi, x.target, y.target);
          c = hi + 1;
          if (c > x.hi) break;
        }
      if (minus && c <= x.hi) emit(c, x.hi, x.target, -1);
    }
    const bool b_accepts = sb && sb->accepting;
    out.states.resize(table.size());
    out.states[k].edges = std::move(edges);
    out.states[k].accepting = sa.accepting && (minus ? !b_accepts : b_accepts);
  }
  return trim(out);
}

}  // namespace dfa_ops
}  // namespace

bool ContentDfa::matches(std::string_view bytes) const {
  if (empty()) return false;
  int32_t s = 0;
  for (char ch : bytes) {
    const auto b = static_cast<unsigned char>(ch);
    int32_t next = -1;
    for (const RangeEdge& e : states[static_cast<size_t>(s)].edges)
      if (e.lo <= b && b <= e.hi) next = e.target;
    if (next < 0) return false;
    s = next;
  }
  return states[static_cast<size_t>(s)].accepting;
}

std::optional<ContentDfa> determinize(const ContentNfa& nfa, int32_t start, int32_t accept) {
  std::vector<uint32_t> mark(nfa.size(), 0);
  uint32_t stamp = 0;
  // The epsilon closure of `seeds`, sorted: the key of a DFA state.
  auto closure = [&](const std::vector<int32_t>& seeds) {
    ++stamp;
    std::vector<int32_t> out, todo;
    for (int32_t s : seeds)
      if (mark[static_cast<size_t>(s)] != stamp) {
        mark[static_cast<size_t>(s)] = stamp;
        todo.push_back(s);
      }
    while (!todo.empty()) {
      const int32_t s = todo.back();
      todo.pop_back();
      out.push_back(s);
      for (int32_t e : nfa.state(s).epsilon)
        if (mark[static_cast<size_t>(e)] != stamp) {
          mark[static_cast<size_t>(e)] = stamp;
          todo.push_back(e);
        }
    }
    std::sort(out.begin(), out.end());
    return out;
  };
  dfa_ops::StateTable<std::vector<int32_t>> table;
  table.intern(closure({start}));
  ContentDfa dfa;
  for (size_t k = 0; k < table.size(); ++k) {
    if (table.size() > kMaxAutomatonStates) return std::nullopt;
    const std::vector<int32_t> set = table.key(k);
    std::vector<RangeEdge> edges;
    std::vector<int> cuts;  // where the set's edges begin and end: between two cuts every byte goes the same way
    for (int32_t s : set)
      for (const RangeEdge& e : nfa.state(s).edges) {
        edges.push_back(e);
        cuts.push_back(e.lo);
        cuts.push_back(e.hi + 1);
      }
    std::sort(cuts.begin(), cuts.end());
    cuts.erase(std::unique(cuts.begin(), cuts.end()), cuts.end());
    std::vector<RangeEdge> out;
    for (size_t i = 0; i + 1 < cuts.size(); ++i) {
      const int lo = cuts[i], hi = cuts[i + 1] - 1;
      std::vector<int32_t> targets;
      for (const RangeEdge& e : edges)
        if (e.lo <= lo && hi <= e.hi) targets.push_back(e.target);
      if (!targets.empty()) dfa_ops::append_edge(out, lo, hi, table.intern(closure(targets)));
    }
    dfa.states.resize(table.size());
    dfa.states[k].edges = std::move(out);
    dfa.states[k].accepting = std::binary_search(set.begin(), set.end(), accept);
  }
  return dfa_ops::trim(dfa);
}

std::optional<ContentDfa> intersect(const ContentDfa& a, const ContentDfa& b) { return dfa_ops::product(a, b, false); }

std::optional<ContentDfa> subtract(const ContentDfa& a, const ContentDfa& b) { return dfa_ops::product(a, b, true); }

std::optional<ContentDfa> limit_length(const ContentDfa& dfa, int min_chars, int max_chars) {
  if (dfa.empty()) return ContentDfa{};
  // A state: (state of dfa, characters so far, inside an escape). Without a maximum the count stops at min_chars.
  dfa_ops::StateTable<std::tuple<int32_t, int, bool>> table;
  table.intern({0, 0, false});
  ContentDfa out;
  for (size_t k = 0; k < table.size(); ++k) {
    if (table.size() > kMaxAutomatonStates) return std::nullopt;
    // Plain variables, not a structured binding: the lambda below captures them (C++20 allows it; clang 14 does not).
    const int32_t s = std::get<0>(table.key(k));
    const int count = std::get<1>(table.key(k));
    const bool in_escape = std::get<2>(table.key(k));
    const int more = max_chars < 0 ? std::min(count + 1, min_chars) : count + 1;  // the count after a new character
    std::vector<RangeEdge> edges;
    for (const RangeEdge& e : dfa.states[static_cast<size_t>(s)].edges) {
      // The byte after a '\' and UTF-8 continuation bytes go on with the character begun; any other byte begins one.
      auto piece = [&](int lo, int hi, bool begins, bool escape) {
        lo = std::max<int>(lo, e.lo);
        hi = std::min<int>(hi, e.hi);
        if (lo > hi || (begins && max_chars >= 0 && more > max_chars)) return;
        dfa_ops::append_edge(edges, lo, hi, table.intern({e.target, begins ? more : count, escape}));
      };
      if (in_escape) {
        piece(0, 255, false, false);
        continue;
      }
      piece(0, 0x5B, true, false);
      piece(0x5C, 0x5C, true, true);
      piece(0x5D, 0x7F, true, false);
      piece(0x80, 0xBF, false, false);
      piece(0xC0, 0xFF, true, false);
    }
    out.states.resize(table.size());
    out.states[k].edges = std::move(edges);
    out.states[k].accepting = dfa.states[static_cast<size_t>(s)].accepting && !in_escape && count >= min_chars;
  }
  return dfa_ops::trim(out);
}

std::pair<int64_t, int64_t> byte_length_bounds(const ContentDfa& dfa) {
  const size_t n = dfa.states.size();
  if (n == 0) return {0, 0};
  // Fewest: breadth-first from the start to the nearest accepting state.
  std::vector<int64_t> dist(n, -1);
  std::vector<int32_t> order{0};
  dist[0] = 0;
  int64_t fewest = -1;
  for (size_t k = 0; k < order.size() && fewest < 0; ++k) {
    const auto s = static_cast<size_t>(order[k]);
    if (dfa.states[s].accepting) fewest = dist[s];
    for (const RangeEdge& e : dfa.states[s].edges)
      if (dist[static_cast<size_t>(e.target)] < 0) {
        dist[static_cast<size_t>(e.target)] = dist[s] + 1;
        order.push_back(e.target);
      }
  }
  // Most: longest paths in topological order; a cycle (every state lies on an accepting path) means no bound.
  std::vector<int32_t> incoming(n, 0);
  for (const ContentDfa::State& s : dfa.states)
    for (const RangeEdge& e : s.edges) ++incoming[static_cast<size_t>(e.target)];
  std::vector<int64_t> longest(n, 0);
  std::vector<int32_t> ready;
  for (size_t s = 0; s < n; ++s)
    if (incoming[s] == 0) ready.push_back(static_cast<int32_t>(s));
  size_t visited = 0;
  int64_t most = 0;
  while (!ready.empty()) {
    const auto s = static_cast<size_t>(ready.back());
    ready.pop_back();
    ++visited;
    if (dfa.states[s].accepting) most = std::max(most, longest[s]);
    for (const RangeEdge& e : dfa.states[s].edges) {
      const auto t = static_cast<size_t>(e.target);
      longest[t] = std::max(longest[t], longest[s] + 1);
      if (--incoming[t] == 0) ready.push_back(e.target);
    }
  }
  return {fewest, visited == n ? most : -1};
}

}  // namespace cai::grammar
