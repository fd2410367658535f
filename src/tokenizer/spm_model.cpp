// SentencePiece-style BPE with scores, as llama.cpp runs GGUF `llama` vocabularies (highest-score pair first).
#include "tokenizer/spm_model.h"

#include <algorithm>
#include <queue>

#include "tokenizer/unicode.h"

namespace cai::tok {
namespace {

struct Symbol {
  int32_t prev;
  int32_t next;
  size_t begin;
  size_t len;  // 0 once merged into its left neighbour
};

struct Bigram {
  float score;
  int32_t left;
  int32_t right;
  size_t len;  // joined length when queued; a different current length means the entry is stale
  // Highest score first, then leftmost (std::priority_queue pops the largest).
  bool operator<(const Bigram& o) const { return score != o.score ? score < o.score : left > o.left; }
};

}  // namespace

SpmModel::SpmModel(std::shared_ptr<const Vocab> vocab, std::vector<float> scores, int32_t unk_id)
    : vocab_(std::move(vocab)), scores_(std::move(scores)), unk_id_(unk_id), byte_ids_(vocab_->byte_token_ids()) {
  scores_.resize(static_cast<size_t>(vocab_->size()), 0.0f);
}

void SpmModel::encode(std::string_view piece, std::vector<int32_t>& out) const {
  std::vector<Symbol> syms;
  for (size_t pos = 0; pos < piece.size();) {
    const size_t n = std::min(utf8_seq_len(static_cast<uint8_t>(piece[pos])), piece.size() - pos);
    const auto index = static_cast<int32_t>(syms.size());
    syms.push_back({index - 1, index + 1, pos, n});
    pos += n;
  }
  if (syms.empty()) return;
  syms.back().next = -1;

  std::priority_queue<Bigram> queue;
  auto try_add = [&](int32_t left, int32_t right) {
    if (left < 0 || right < 0) return;
    const size_t len = syms[left].len + syms[right].len;
    if (auto id = vocab_->find(piece.substr(syms[left].begin, len)))
      queue.push({scores_[static_cast<size_t>(*id)], left, right, len});
  };
  for (int32_t i = 1; i < static_cast<int32_t>(syms.size()); ++i) try_add(i - 1, i);

  while (!queue.empty()) {
    const Bigram b = queue.top();
    queue.pop();
    Symbol& left = syms[b.left];
    Symbol& right = syms[b.right];
    if (left.len == 0 || right.len == 0 || left.len + right.len != b.len) continue;
    left.len += right.len;
    right.len = 0;
    left.next = right.next;
    if (right.next >= 0) syms[right.next].prev = b.left;
    try_add(left.prev, b.left);
    try_add(b.left, left.next);
  }
  for (int32_t i = 0; i >= 0; i = syms[i].next) emit_symbol(piece.substr(syms[i].begin, syms[i].len), out);
}

// A final symbol is a token, or (only for single characters, since merges always form tokens) its bytes as
// <0xXX> tokens, else one-byte tokens, else one unk for the whole character.
void SpmModel::emit_symbol(std::string_view text, std::vector<int32_t>& out) const {
  if (auto id = vocab_->find(text)) {
    out.push_back(*id);
    return;
  }
  const size_t start = out.size();
  for (char c : text) {
    int32_t id = byte_ids_[static_cast<uint8_t>(c)];
    if (id < 0) id = vocab_->find(std::string_view(&c, 1)).value_or(-1);
    if (id < 0) {
      out.resize(start);
      if (unk_id_ >= 0) out.push_back(unk_id_);
      return;
    }
    out.push_back(id);
  }
}

}  // namespace cai::tok
