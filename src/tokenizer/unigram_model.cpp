// Unigram language-model tokenization (HF `Unigram`): Viterbi search for the best-scoring segmentation.
#include "tokenizer/unigram_model.h"

#include <algorithm>
#include <limits>

#include "tokenizer/unicode.h"

namespace cai::tok {
namespace {

constexpr float kUnkPenalty = 10.0f;

struct Node {
  double score = -std::numeric_limits<double>::infinity();
  size_t from = 0;  // start byte of the last token of the best path ending here
  int32_t id = -1;  // that token; -1 for an unknown character
};

}  // namespace

UnigramModel::UnigramModel(std::shared_ptr<const Vocab> vocab, std::vector<float> scores, int32_t unk_id,
                           bool byte_fallback)
    : vocab_(std::move(vocab)), scores_(std::move(scores)), unk_id_(unk_id), byte_fallback_(byte_fallback),
      byte_ids_(vocab_->byte_token_ids()) {
  scores_.resize(static_cast<size_t>(vocab_->size()), 0.0f);
  float min_score = 0.0f;
  for (float s : scores_) min_score = std::min(min_score, s);
  unk_score_ = min_score - kUnkPenalty;
  for (const std::string& t : vocab_->texts()) max_piece_bytes_ = std::max(max_piece_bytes_, t.size());
}

void UnigramModel::encode(std::string_view piece, std::vector<int32_t>& out) const {
  const size_t n = piece.size();
  std::vector<Node> best(n + 1);
  best[0].score = 0.0;
  for (size_t i = 0; i < n;) {
    const size_t char_len = std::min(utf8_seq_len(static_cast<uint8_t>(piece[i])), n - i);
    bool char_covered = false;
    for (size_t len = 1; len <= std::min(max_piece_bytes_, n - i); ++len) {
      const auto id = vocab_->find(piece.substr(i, len));
      if (!id) continue;
      char_covered = char_covered || len == char_len;
      const double s = best[i].score + scores_[static_cast<size_t>(*id)];
      if (s > best[i + len].score) best[i + len] = {s, i, *id};
    }
    if (!char_covered && best[i].score + unk_score_ > best[i + char_len].score)
      best[i + char_len] = {best[i].score + unk_score_, i, -1};
    i += char_len;
  }
  // Walk back from the end, then emit in order.
  std::vector<size_t> ends;
  for (size_t at = n; at > 0; at = best[at].from) ends.push_back(at);
  bool last_unk = false;
  for (auto it = ends.rbegin(); it != ends.rend(); ++it) {
    const Node& node = best[*it];
    if (node.id >= 0) {
      out.push_back(node.id);
      last_unk = false;
      continue;
    }
    const std::string_view ch = piece.substr(node.from, *it - node.from);
    bool bytes_ok = byte_fallback_;
    for (char b : ch) bytes_ok = bytes_ok && byte_ids_[static_cast<uint8_t>(b)] >= 0;
    if (bytes_ok) {
      for (char b : ch) out.push_back(byte_ids_[static_cast<uint8_t>(b)]);
      last_unk = false;
    } else if (unk_id_ >= 0 && !last_unk) {
      out.push_back(unk_id_);
      last_unk = true;
    }
  }
}

}  // namespace cai::tok
