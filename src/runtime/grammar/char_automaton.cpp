// Character sets, their JSON spelling (UTF-8 and short escapes) as NFA edges, and the NFA over string contents;
// the DFA constructions are in content_dfa.cpp.
#include "runtime/grammar/char_automaton.h"

#include <algorithm>

namespace cai::grammar {

namespace {
namespace automaton {

constexpr char32_t kMaxScalar = 0x10FFFF;
constexpr char32_t kSurrogateLo = 0xD800, kSurrogateHi = 0xDFFF;

// The UTF-8 bytes of `c` (not a surrogate); returns how many.
int encode_utf8(char32_t c, unsigned char* out) {
  if (c < 0x80) {
    out[0] = static_cast<unsigned char>(c);
    return 1;
  }
  if (c < 0x800) {
    out[0] = static_cast<unsigned char>(0xC0 | (c >> 6));
    out[1] = static_cast<unsigned char>(0x80 | (c & 0x3F));
    return 2;
  }
  if (c < 0x10000) {
    out[0] = static_cast<unsigned char>(0xE0 | (c >> 12));
    out[1] = static_cast<unsigned char>(0x80 | ((c >> 6) & 0x3F));
    out[2] = static_cast<unsigned char>(0x80 | (c & 0x3F));
    return 3;
  }
  out[0] = static_cast<unsigned char>(0xF0 | (c >> 18));
  out[1] = static_cast<unsigned char>(0x80 | ((c >> 12) & 0x3F));
  out[2] = static_cast<unsigned char>(0x80 | ((c >> 6) & 0x3F));
  out[3] = static_cast<unsigned char>(0x80 | (c & 0x3F));
  return 4;
}

}  // namespace automaton
}  // namespace

CharSet CharSet::range(char32_t lo, char32_t hi) {
  CharSet s;
  s.add(lo, hi);
  return s;
}

CharSet CharSet::any() { return range(0, automaton::kMaxScalar); }

void CharSet::add(char32_t lo, char32_t hi) {
  hi = std::min(hi, automaton::kMaxScalar);
  if (lo > hi) return;
  if (lo <= automaton::kSurrogateHi && hi >= automaton::kSurrogateLo) {  // surrogates are no characters
    if (lo < automaton::kSurrogateLo) add(lo, automaton::kSurrogateLo - 1);
    if (hi > automaton::kSurrogateHi) add(automaton::kSurrogateHi + 1, hi);
    return;
  }
  ranges_.emplace_back(lo, hi);
  std::sort(ranges_.begin(), ranges_.end());
  std::vector<std::pair<char32_t, char32_t>> merged;
  for (const auto& r : ranges_) {
    if (!merged.empty() && r.first <= merged.back().second + 1)
      merged.back().second = std::max(merged.back().second, r.second);
    else
      merged.push_back(r);
  }
  ranges_ = std::move(merged);
}

void CharSet::add(const CharSet& other) {
  for (const auto& [lo, hi] : other.ranges_) add(lo, hi);
}

CharSet CharSet::complement() const {
  CharSet out;
  char32_t next = 0;  // the first value not yet decided
  for (const auto& [lo, hi] : ranges_) {
    if (lo > next) out.add(next, lo - 1);
    next = hi + 1;
  }
  if (next <= automaton::kMaxScalar) out.add(next, automaton::kMaxScalar);
  return out;
}

int32_t ContentNfa::add_state() {
  states_.emplace_back();
  return static_cast<int32_t>(states_.size() - 1);
}

void ContentNfa::add_edge(int32_t from, unsigned char lo, unsigned char hi, int32_t to) {
  states_[static_cast<size_t>(from)].edges.push_back({lo, hi, to});
}

void ContentNfa::add_chars(int32_t from, const CharSet& set, int32_t to) {
  int32_t escape = -1;  // the state after a '\', made on first use
  auto escaped = [&](char c) {
    if (escape < 0) {
      escape = add_state();
      add_edge(from, '\\', '\\', escape);
    }
    add_edge(escape, static_cast<unsigned char>(c), static_cast<unsigned char>(c), to);
  };
  auto plain = [&](char32_t lo, char32_t hi) {
    if (lo <= hi) add_edge(from, static_cast<unsigned char>(lo), static_cast<unsigned char>(hi), to);
  };
  for (const auto& [lo, hi] : set.ranges()) {
    for (char32_t c = lo; c <= std::min<char32_t>(hi, 0x1F); ++c) {
      static constexpr std::pair<char32_t, char> kShort[] = {{8, 'b'}, {9, 't'}, {10, 'n'}, {12, 'f'}, {13, 'r'}};
      for (const auto& [code, letter] : kShort)
        if (c == code) escaped(letter);
    }
    if (lo <= 0x7F && hi >= 0x20) {
      const char32_t a = std::max<char32_t>(lo, 0x20), b = std::min<char32_t>(hi, 0x7F);
      plain(a, std::min<char32_t>(b, 0x21));
      plain(std::max<char32_t>(a, 0x23), std::min<char32_t>(b, 0x5B));
      plain(std::max<char32_t>(a, 0x5D), b);
      if (a <= '"' && '"' <= b) escaped('"');
      if (a <= '\\' && '\\' <= b) escaped('\\');
      if (a <= '/' && '/' <= b) escaped('/');
    }
    static constexpr std::pair<char32_t, char32_t> kLengths[] = {{0x80, 0x7FF}, {0x800, 0xFFFF}, {0x10000, 0x10FFFF}};
    for (const auto& [first, last] : kLengths) {
      const char32_t a = std::max(lo, first), b = std::min(hi, last);
      if (a > b) continue;
      unsigned char ea[4], eb[4];
      const int n = automaton::encode_utf8(a, ea);
      automaton::encode_utf8(b, eb);
      add_utf8(from, ea, eb, n, to);
    }
  }
}

void ContentNfa::add_utf8(int32_t from, const unsigned char* lo, const unsigned char* hi, int n, int32_t to) {
  if (n == 1) {
    add_edge(from, lo[0], hi[0], to);
    return;
  }
  if (lo[0] == hi[0]) {  // a shared lead byte: the rest spans lo's tail to hi's
    const int32_t mid = add_state();
    add_edge(from, lo[0], lo[0], mid);
    add_utf8(mid, lo + 1, hi + 1, n - 1, to);
    return;
  }
  static constexpr unsigned char kLowest[3] = {0x80, 0x80, 0x80}, kHighest[3] = {0xBF, 0xBF, 0xBF};
  const bool lo_whole = std::equal(lo + 1, lo + n, kLowest);  // lo's lead byte takes every continuation
  const bool hi_whole = std::equal(hi + 1, hi + n, kHighest);
  int first = lo[0], last = hi[0];  // the lead bytes followed by any continuation bytes
  if (!lo_whole) {
    const int32_t mid = add_state();
    add_edge(from, lo[0], lo[0], mid);
    add_utf8(mid, lo + 1, kHighest, n - 1, to);
    ++first;
  }
  if (!hi_whole) {
    const int32_t mid = add_state();
    add_edge(from, hi[0], hi[0], mid);
    add_utf8(mid, kLowest, hi + 1, n - 1, to);
    --last;
  }
  if (first > last) return;
  int32_t cur = from;
  for (int k = 0; k < n; ++k) {
    const int32_t next = k == n - 1 ? to : add_state();
    add_edge(cur, static_cast<unsigned char>(k == 0 ? first : 0x80), static_cast<unsigned char>(k == 0 ? last : 0xBF),
             next);
    cur = next;
  }
}

int32_t ContentNfa::add_dfa(const ContentDfa& dfa, int32_t to) {
  if (dfa.empty()) return add_state();  // no way on
  const auto base = static_cast<int32_t>(states_.size());
  states_.resize(states_.size() + dfa.states.size());
  for (size_t s = 0; s < dfa.states.size(); ++s) {
    State& state = states_[static_cast<size_t>(base) + s];
    for (const RangeEdge& e : dfa.states[s].edges) state.edges.push_back({e.lo, e.hi, base + e.target});
    if (dfa.states[s].accepting) state.epsilon.push_back(to);
  }
  return base;
}

bool ContentNfa::epsilon_reaches(int32_t from, int32_t to) const {
  std::vector<char> seen(states_.size(), 0);
  std::vector<int32_t> todo{from};
  seen[static_cast<size_t>(from)] = 1;
  while (!todo.empty()) {
    const int32_t s = todo.back();
    todo.pop_back();
    if (s == to) return true;
    for (int32_t e : state(s).epsilon)
      if (!seen[static_cast<size_t>(e)]) {
        seen[static_cast<size_t>(e)] = 1;
        todo.push_back(e);
      }
  }
  return false;
}

}  // namespace cai::grammar
