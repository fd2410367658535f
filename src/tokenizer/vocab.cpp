// Vocab: token id ↔ text (open-addressing index), token kinds (GGUF token_type numbering), byte-token table.
#include "tokenizer/vocab.h"

#include <functional>

namespace cai::tok {
namespace {

uint32_t hash_text(std::string_view text) { return static_cast<uint32_t>(std::hash<std::string_view>{}(text)); }

}  // namespace

size_t Vocab::probe(std::string_view text, uint32_t hash) const {
  const size_t mask = slots_.size() - 1;
  for (size_t i = hash & mask;; i = (i + 1) & mask) {
    const Slot& s = slots_[i];
    if (s.id < 0 || (s.hash == hash && texts_[static_cast<size_t>(s.id)] == text)) return i;
  }
}

std::optional<int32_t> Vocab::find(std::string_view text) const {
  if (slots_.empty()) return std::nullopt;
  const Slot& s = slots_[probe(text, hash_text(text))];
  if (s.id < 0) return std::nullopt;
  return s.id;
}

void Vocab::grow() {
  std::vector<Slot> old = std::move(slots_);
  slots_.assign(old.empty() ? 1024 : old.size() * 2, Slot{});
  const size_t mask = slots_.size() - 1;
  for (const Slot& s : old) {
    if (s.id < 0) continue;
    size_t i = s.hash & mask;
    while (slots_[i].id >= 0) i = (i + 1) & mask;
    slots_[i] = s;
  }
}

void Vocab::index(int32_t id, bool replace) {
  if (2 * (n_indexed_ + 1) > slots_.size()) grow();
  const std::string& text = texts_[static_cast<size_t>(id)];
  const uint32_t hash = hash_text(text);
  Slot& s = slots_[probe(text, hash)];
  if (s.id < 0) {
    s = {hash, id};
    ++n_indexed_;
  } else if (replace) {
    s.id = id;
  }
}

void Vocab::reserve(size_t n_tokens) {
  texts_.reserve(n_tokens);
  kinds_.reserve(n_tokens);
  while (2 * n_tokens > slots_.size()) grow();
}

int32_t Vocab::add(std::string text, TokenKind kind) {
  const auto id = static_cast<int32_t>(texts_.size());
  texts_.push_back(std::move(text));
  kinds_.push_back(kind);
  index(id, /*replace=*/false);
  return id;
}

void Vocab::set(int32_t id, std::string text, TokenKind kind) {
  if (id >= size()) {
    texts_.resize(static_cast<size_t>(id) + 1);
    kinds_.resize(static_cast<size_t>(id) + 1, TokenKind::kUnused);
  }
  texts_[static_cast<size_t>(id)] = std::move(text);  // an old text's slot no longer matches: it is just dead
  kinds_[static_cast<size_t>(id)] = kind;
  index(id, /*replace=*/true);
}

std::array<int32_t, 256> Vocab::byte_token_ids() const {
  std::array<int32_t, 256> out;
  static const char kHex[] = "0123456789ABCDEF";
  for (int b = 0; b < 256; ++b) {
    const char text[] = {'<', '0', 'x', kHex[b >> 4], kHex[b & 15], '>', 0};
    out[static_cast<size_t>(b)] = find(text).value_or(-1);
  }
  return out;
}

}  // namespace cai::tok
