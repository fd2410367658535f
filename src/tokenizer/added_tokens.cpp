// Added / special tokens: finds them in raw text (leftmost, longest first) so they bypass the model.
#include "tokenizer/added_tokens.h"

#include <algorithm>

#include "tokenizer/unicode.h"

namespace cai::tok {
namespace {

bool is_space(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\v' || c == '\f'; }

// A byte that belongs to a word for single_word tokens: ASCII alphanumerics, '_' and any non-ASCII byte.
bool is_word_byte(char c) {
  const auto u = static_cast<uint8_t>(c);
  return u >= 0x80 || c == '_' || (c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z');
}

}  // namespace

void AddedTokenMatcher::add(AddedToken token) {
  if (token.content.empty()) return;
  const auto first = static_cast<uint8_t>(token.content[0]);
  tokens_.push_back(std::move(token));
  auto& bucket = by_first_byte_[first];
  bucket.push_back(static_cast<uint32_t>(tokens_.size() - 1));
  std::stable_sort(bucket.begin(), bucket.end(),
                   [&](uint32_t a, uint32_t b) { return tokens_[a].content.size() > tokens_[b].content.size(); });
}

const AddedToken* AddedTokenMatcher::match_at(std::string_view text, size_t pos, bool parse_special,
                                              bool normalized_stage) const {
  for (uint32_t index : by_first_byte_[static_cast<uint8_t>(text[pos])]) {
    const AddedToken& t = tokens_[index];
    if (t.normalized != normalized_stage || (t.special && !parse_special)) continue;
    if (text.compare(pos, t.content.size(), t.content) != 0) continue;
    if (t.single_word) {
      const size_t end = pos + t.content.size();
      if ((pos > 0 && is_word_byte(text[pos - 1])) || (end < text.size() && is_word_byte(text[end]))) continue;
    }
    return &t;
  }
  return nullptr;
}

std::vector<TextOrToken> AddedTokenMatcher::split(std::string_view text, bool parse_special,
                                                  bool normalized_stage) const {
  std::vector<TextOrToken> out;
  size_t text_begin = 0;  // start of the pending text piece
  for (size_t pos = 0; pos < text.size();) {
    const AddedToken* t = tokens_.empty() ? nullptr : match_at(text, pos, parse_special, normalized_stage);
    if (t == nullptr) {
      pos += std::min(utf8_seq_len(static_cast<uint8_t>(text[pos])), text.size() - pos);
      continue;
    }
    size_t text_end = pos;
    if (t->lstrip)
      while (text_end > text_begin && is_space(text[text_end - 1])) --text_end;
    if (text_end > text_begin) out.push_back({text.substr(text_begin, text_end - text_begin), -1});
    out.push_back({{}, t->id});
    pos += t->content.size();
    if (t->rstrip)
      while (pos < text.size() && is_space(text[pos])) ++pos;
    text_begin = pos;
  }
  if (text_begin < text.size()) out.push_back({text.substr(text_begin), -1});
  return out;
}

}  // namespace cai::tok
