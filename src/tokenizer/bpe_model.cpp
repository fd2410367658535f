// Byte-pair encoding with ranked merges (byte-level GPT-2 style, and HF BPE with byte_fallback / unk).
#include "tokenizer/bpe_model.h"

#include <algorithm>
#include <queue>
#include <string>

#include "tokenizer/unicode.h"

namespace cai::tok {
namespace {

struct Symbol {
  int32_t id;
  int32_t prev;
  int32_t next;
  bool alive;
};

struct Candidate {
  int32_t rank;
  int32_t left;  // symbol index
  int32_t left_id;
  int32_t right_id;
  // Lowest rank first, then leftmost (std::priority_queue pops the largest).
  bool operator<(const Candidate& o) const { return rank != o.rank ? rank > o.rank : left > o.left; }
};

}  // namespace

BpeModel::BpeModel(std::shared_ptr<const Vocab> vocab, BpeOptions options)
    : vocab_(std::move(vocab)), options_(options), byte_ids_(vocab_->byte_token_ids()) {}

size_t BpeModel::slot_of(uint64_t key) const {
  uint64_t h = key;  // splitmix64 finalizer: every key bit reaches the low bits used as the index
  h = (h ^ (h >> 30)) * 0xBF58476D1CE4E5B9ull;
  h = (h ^ (h >> 27)) * 0x94D049BB133111EBull;
  h ^= h >> 31;
  const size_t mask = merges_.size() - 1;
  size_t i = static_cast<size_t>(h) & mask;
  while (merges_[i].key != kEmpty && merges_[i].key != key) i = (i + 1) & mask;
  return i;
}

void BpeModel::grow() {
  std::vector<Merge> old = std::move(merges_);
  merges_.assign(old.empty() ? 1024 : old.size() * 2, Merge{});
  for (const Merge& m : old)
    if (m.key != kEmpty) merges_[slot_of(m.key)] = m;
}

void BpeModel::reserve(size_t n_merges) {
  while (2 * n_merges > merges_.size()) grow();
}

bool BpeModel::add_merge(std::string_view left, std::string_view right) {
  const int32_t rank = n_ranks_++;
  const auto l = vocab_->find(left), r = vocab_->find(right);
  if (!l || !r) return false;
  std::string joined;
  joined.reserve(left.size() + right.size());
  joined.append(left).append(right);
  const auto m = vocab_->find(joined);
  if (!m) return false;
  if (2 * (n_merges_ + 1) > merges_.size()) grow();
  Merge& slot = merges_[slot_of(pair_key(*l, *r))];
  if (slot.key != kEmpty) return true;  // a repeated pair keeps its first rank
  slot = {pair_key(*l, *r), rank, *m};
  ++n_merges_;
  return true;
}

const BpeModel::Merge* BpeModel::find_merge(int32_t left, int32_t right) const {
  if (merges_.empty()) return nullptr;
  const Merge& m = merges_[slot_of(pair_key(left, right))];
  return m.key == kEmpty ? nullptr : &m;
}

void BpeModel::encode(std::string_view piece, std::vector<int32_t>& out) const {
  if (options_.ignore_merges) {
    if (auto id = vocab_->find(piece)) {
      out.push_back(*id);
      return;
    }
  }
  // Initial symbols: one per character; unknown characters go to bytes / unk / nothing.
  std::vector<Symbol> syms;
  syms.reserve(piece.size());
  bool last_unk = false;
  for (size_t pos = 0; pos < piece.size();) {
    const size_t n = std::min(utf8_seq_len(static_cast<uint8_t>(piece[pos])), piece.size() - pos);
    const std::string_view ch = piece.substr(pos, n);
    pos += n;
    auto push = [&](int32_t id) { syms.push_back({id, static_cast<int32_t>(syms.size()) - 1, -1, true}); };
    if (auto id = vocab_->find(ch)) {
      push(*id);
      last_unk = false;
      continue;
    }
    bool bytes_ok = options_.byte_fallback;
    for (char b : ch) bytes_ok = bytes_ok && byte_ids_[static_cast<uint8_t>(b)] >= 0;
    if (bytes_ok) {
      for (char b : ch) push(byte_ids_[static_cast<uint8_t>(b)]);
      last_unk = false;
    } else if (options_.unk_id >= 0) {
      if (!(options_.fuse_unk && last_unk)) push(options_.unk_id);
      last_unk = true;
    }
  }
  for (size_t i = 0; i + 1 < syms.size(); ++i) syms[i].next = static_cast<int32_t>(i + 1);

  std::priority_queue<Candidate> queue;
  auto consider = [&](int32_t left) {
    if (left < 0 || syms[left].next < 0) return;
    const int32_t right = syms[left].next;
    if (const Merge* m = find_merge(syms[left].id, syms[right].id))
      queue.push({m->rank, left, syms[left].id, syms[right].id});
  };
  for (int32_t i = 0; i + 1 < static_cast<int32_t>(syms.size()); ++i) consider(i);

  while (!queue.empty()) {
    const Candidate c = queue.top();
    queue.pop();
    Symbol& left = syms[c.left];
    if (!left.alive || left.id != c.left_id || left.next < 0 || syms[left.next].id != c.right_id) continue;
    Symbol& right = syms[left.next];
    left.id = find_merge(c.left_id, c.right_id)->merged_id;
    right.alive = false;
    left.next = right.next;
    if (right.next >= 0) syms[right.next].prev = c.left;
    consider(left.prev);
    consider(c.left);
  }
  for (int32_t i = syms.empty() ? -1 : 0; i >= 0; i = syms[i].next) out.push_back(syms[i].id);
}

}  // namespace cai::tok
