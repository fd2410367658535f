// Vocab: token id ↔ text, token kinds (GGUF token_type numbering) and the byte-token table shared by the models.
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

namespace cai::tok {

// Same numbers as GGUF tokenizer.ggml.token_type.
enum class TokenKind : uint8_t { kNormal = 1, kUnknown = 2, kControl = 3, kUserDefined = 4, kUnused = 5, kByte = 6 };

struct StringHash {
  using is_transparent = void;
  size_t operator()(std::string_view s) const { return std::hash<std::string_view>{}(s); }
};

struct Vocab {
  std::vector<std::string> texts;  // id → text as stored (byte-level form for BPE, ▁ form for SentencePiece)
  std::vector<TokenKind> kinds;
  std::unordered_map<std::string, int32_t, StringHash, std::equal_to<>> ids;  // text → id (first id wins)

  int32_t size() const { return static_cast<int32_t>(texts.size()); }
  std::optional<int32_t> find(std::string_view text) const {
    auto it = ids.find(text);
    if (it == ids.end()) return std::nullopt;
    return it->second;
  }
  // Adds `text` as the next id.
  int32_t add(std::string text, TokenKind kind) {
    const auto id = static_cast<int32_t>(texts.size());
    ids.emplace(text, id);
    texts.push_back(std::move(text));
    kinds.push_back(kind);
    return id;
  }
  // id of the `<0xXX>` token of each byte, -1 where the vocabulary has none.
  std::array<int32_t, 256> byte_token_ids() const {
    std::array<int32_t, 256> out;
    static const char kHex[] = "0123456789ABCDEF";
    for (int b = 0; b < 256; ++b) {
      const char text[] = {'<', '0', 'x', kHex[b >> 4], kHex[b & 15], '>', 0};
      out[b] = find(text).value_or(-1);
    }
    return out;
  }
};

}  // namespace cai::tok
