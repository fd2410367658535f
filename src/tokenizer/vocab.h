// Vocab: token id ↔ text (open-addressing index), token kinds (GGUF token_type numbering), byte-token table.
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace cai::tok {

// Same numbers as GGUF tokenizer.ggml.token_type.
enum class TokenKind : uint8_t { kNormal = 1, kUnknown = 2, kControl = 3, kUserDefined = 4, kUnused = 5, kByte = 6 };

class Vocab {
 public:
  int32_t size() const { return static_cast<int32_t>(texts_.size()); }
  // Text as stored (byte-level form for BPE, ▁ form for SentencePiece); `id` must be in range.
  const std::string& text(int32_t id) const { return texts_[static_cast<size_t>(id)]; }
  TokenKind kind(int32_t id) const { return kinds_[static_cast<size_t>(id)]; }
  const std::vector<std::string>& texts() const { return texts_; }

  std::optional<int32_t> find(std::string_view text) const;
  // Appends a token; if its text is already present, lookups keep finding the earlier id.
  int32_t add(std::string text, TokenKind kind);
  // Sets token `id` (growing the vocab, gaps become empty kUnused tokens); its text now finds `id`.
  void set(int32_t id, std::string text, TokenKind kind);
  void reserve(size_t n_tokens);

  // id of the `<0xXX>` token of each byte, -1 where the vocabulary has none.
  std::array<int32_t, 256> byte_token_ids() const;

 private:
  struct Slot {
    uint32_t hash = 0;
    int32_t id = -1;  // -1: empty
  };
  // Index of the slot holding `text`, or of the empty slot where it would go.
  size_t probe(std::string_view text, uint32_t hash) const;
  void index(int32_t id, bool replace);
  void grow();

  std::vector<std::string> texts_;
  std::vector<TokenKind> kinds_;
  std::vector<Slot> slots_;  // power-of-two size, at most half full
  size_t n_indexed_ = 0;
};

}  // namespace cai::tok
