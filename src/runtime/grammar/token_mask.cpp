// TokenVocabulary indexing and TokenMasker: allowed-token bitsets by one walk over the sorted token bytes, reusing
// the DFA states of the shared prefix and skipping every token under a dead prefix.
#include "runtime/grammar/token_mask.h"

#include <algorithm>
#include <array>
#include <bit>
#include <limits>
#include <numeric>

#include "tokenizer/tokenizer.h"

namespace cai::grammar {

TokenVocabulary::TokenVocabulary(const Tokenizer& tokenizer) {
  const int32_t n = tokenizer.n_vocab();
  bytes_.resize(static_cast<size_t>(n));
  for (int32_t t = 0; t < n; ++t) {
    if (tokenizer.is_eog(t))
      end_.push_back(t);
    else if (!tokenizer.is_special(t))
      bytes_[static_cast<size_t>(t)] = tokenizer.token_text(t);
  }
  index();
}

TokenVocabulary::TokenVocabulary(std::vector<std::string> token_bytes, std::vector<int32_t> end_tokens)
    : bytes_(std::move(token_bytes)), end_(std::move(end_tokens)) {
  std::sort(end_.begin(), end_.end());
  for (int32_t t : end_) bytes_[static_cast<size_t>(t)].clear();
  index();
}

bool TokenVocabulary::is_end(int32_t token) const { return std::binary_search(end_.begin(), end_.end(), token); }

void TokenVocabulary::index() {
  for (int32_t t = 0; t < size(); ++t)
    if (!bytes_[static_cast<size_t>(t)].empty()) sorted_.push_back(t);
  std::sort(sorted_.begin(), sorted_.end(), [&](int32_t a, int32_t b) { return bytes(a) < bytes(b); });
  shared_.assign(sorted_.size(), 0);
  for (int32_t t : sorted_) {
    sorted_offsets_.push_back(static_cast<uint32_t>(sorted_bytes_.size()));
    sorted_bytes_ += bytes(t);
  }
  sorted_offsets_.push_back(static_cast<uint32_t>(sorted_bytes_.size()));
  for (size_t i = 1; i < sorted_.size(); ++i) {
    const std::string& a = bytes(sorted_[i - 1]);
    const std::string& b = bytes(sorted_[i]);
    const size_t most = std::min({a.size(), b.size(), size_t{std::numeric_limits<uint16_t>::max()}});
    size_t k = 0;
    while (k < most && a[k] == b[k]) ++k;
    shared_[i] = static_cast<uint16_t>(k);
  }
}

TokenMasker::ClassIndex TokenMasker::index_classes(const Program& program, const TokenVocabulary& vocab) {
  std::array<bool, 257> starts{};  // a class starts at byte b
  starts[0] = true;
  for (const NfaNode& n : program.nodes)
    for (const NfaNode::ByteEdge& e : n.bytes) starts[e.lo] = true, starts[static_cast<size_t>(e.hi) + 1] = true;
  std::array<char, 256> rep{};
  unsigned char first = 0;
  for (int b = 0; b < 256; ++b) {
    if (starts[static_cast<size_t>(b)]) first = static_cast<unsigned char>(b);
    rep[static_cast<size_t>(b)] = static_cast<char>(first);
  }
  ClassIndex ix;
  std::vector<std::string> cls(vocab.sorted_.size());
  for (size_t i = 0; i < vocab.sorted_.size(); ++i) {
    std::string& c = cls[i];
    c = vocab.bytes(vocab.sorted_[i]);
    for (char& ch : c) ch = rep[static_cast<unsigned char>(ch)];
  }
  std::vector<uint32_t> perm(cls.size());
  std::iota(perm.begin(), perm.end(), 0u);
  std::sort(perm.begin(), perm.end(), [&](uint32_t a, uint32_t b) { return cls[a] < cls[b]; });
  ix.order.reserve(perm.size());
  ix.shared.assign(perm.size(), 0);
  for (size_t i = 0; i < perm.size(); ++i) {
    ix.order.push_back(vocab.sorted_[perm[i]]);
    ix.offsets.push_back(static_cast<uint32_t>(ix.bytes.size()));
    ix.bytes += cls[perm[i]];
    if (i == 0) continue;
    const std::string& a = cls[perm[i - 1]];
    const std::string& b = cls[perm[i]];
    const size_t most = std::min({a.size(), b.size(), size_t{std::numeric_limits<uint16_t>::max()}});
    size_t k = 0;
    while (k < most && a[k] == b[k]) ++k;
    ix.shared[i] = static_cast<uint16_t>(k);
  }
  ix.offsets.push_back(static_cast<uint32_t>(ix.bytes.size()));
  return ix;
}

TokenMasker::TokenMasker(Program program, std::shared_ptr<const TokenVocabulary> vocab)
    : classes_(index_classes(program, *vocab)), dfa_(std::move(program)), vocab_(std::move(vocab)) {}

std::shared_ptr<const TokenBitset> TokenMasker::allowed(int32_t state) {
  std::lock_guard lock(mu_);
  if (auto it = cache_.find(state); it != cache_.end()) return it->second;
  if (cache_.size() >= kMaxCachedMasks) cache_.clear();
  auto mask = compute(state);
  cache_.emplace(state, mask);
  return mask;
}

std::shared_ptr<const TokenBitset> TokenMasker::compute(int32_t state) {
  const TokenVocabulary& v = *vocab_;
  auto mask = std::make_shared<TokenBitset>((static_cast<size_t>(v.size()) + 63) / 64, 0);
  auto allow = [&](int32_t t) { (*mask)[static_cast<size_t>(t) / 64] |= uint64_t{1} << (t % 64); };
  if (dfa_.accepting(state))
    for (int32_t t : v.end_) allow(t);
  // path[d] = the DFA state after the first d bytes of the current token.
  std::vector<int32_t> path{state};
  size_t dead_at = std::numeric_limits<size_t>::max();  // the current prefix of this length is dead
  const ClassIndex& c = classes_;
  for (size_t i = 0; i < c.order.size(); ++i) {
    const size_t shared = c.shared[i];
    if (shared >= dead_at) continue;  // starts with the dead prefix
    dead_at = std::numeric_limits<size_t>::max();
    const std::string_view b(c.bytes.data() + c.offsets[i], c.offsets[i + 1] - c.offsets[i]);
    path.resize(shared + 1);
    size_t d = shared;
    for (; d < b.size(); ++d) {
      const int32_t next = dfa_.step(path[d], static_cast<unsigned char>(b[d]));
      if (next == ByteDfa::kDead) break;
      path.push_back(next);
    }
    if (d == b.size())
      allow(c.order[i]);
    else
      dead_at = d + 1;
  }
  return mask;
}

void TokenMasker::apply(int32_t state, std::span<float> logits) {
  const std::shared_ptr<const TokenBitset> mask = allowed(state);
  const size_t n = std::min(logits.size(), static_cast<size_t>(vocab_->size()));
  const bool none = std::all_of(mask->begin(), mask->end(), [](uint64_t w) { return w == 0; });
  constexpr float kNegInf = -std::numeric_limits<float>::infinity();
  if (none) {  // a dead end the vocabulary cannot leave: let the sequence end
    for (size_t t = 0; t < logits.size(); ++t)
      if (t >= n || !vocab_->is_end(static_cast<int32_t>(t))) logits[t] = kNegInf;
    return;
  }
  for (size_t w = 0; w * 64 < n; ++w) {
    const size_t base = w * 64, end = std::min(n, base + 64);
    uint64_t banned = ~(*mask)[w];
    if (end - base < 64) banned &= (uint64_t{1} << (end - base)) - 1;
    if (banned == ~uint64_t{0}) {  // the common case in a constrained state: a whole word of banned tokens
      std::fill(logits.begin() + static_cast<std::ptrdiff_t>(base), logits.begin() + static_cast<std::ptrdiff_t>(end),
                kNegInf);
      continue;
    }
    for (; banned; banned &= banned - 1) logits[base + static_cast<size_t>(std::countr_zero(banned))] = kNegInf;
  }
  for (size_t t = n; t < logits.size(); ++t) logits[t] = kNegInf;
}

int32_t TokenMasker::walk(int32_t state, std::string_view bytes) {
  for (char c : bytes) {
    if (state == ByteDfa::kDead) break;
    state = dfa_.step(state, static_cast<unsigned char>(c));
  }
  return state;
}

int32_t TokenMasker::advance(int32_t state, int32_t token) {
  if (token < 0 || token >= vocab_->size()) return ByteDfa::kDead;
  const std::string& b = vocab_->bytes(token);
  std::lock_guard lock(mu_);
  if (b.empty()) return vocab_->is_end(token) && dfa_.accepting(state) ? state : ByteDfa::kDead;
  return walk(state, b);
}

int32_t TokenMasker::advance_bytes(int32_t state, std::string_view bytes) {
  std::lock_guard lock(mu_);
  return walk(state, bytes);
}

bool TokenMasker::can_start() {
  const std::shared_ptr<const TokenBitset> mask = allowed(start());
  return std::any_of(mask->begin(), mask->end(), [](uint64_t w) { return w != 0; });
}

bool TokenMasker::accepting(int32_t state) {
  std::lock_guard lock(mu_);
  return state >= 0 && dfa_.accepting(state);
}

bool TokenMasker::finished(int32_t state) {
  std::lock_guard lock(mu_);
  return state >= 0 && dfa_.finished(state);
}

}  // namespace cai::grammar
