// Byte-pair encoding with ranked merges (byte-level GPT-2 style, and HF BPE with byte_fallback / unk).
#pragma once

#include <array>
#include <memory>
#include <string_view>
#include <vector>

#include "tokenizer/token_model.h"
#include "tokenizer/vocab.h"

namespace cai::tok {

struct BpeOptions {
  bool ignore_merges = false;  // a piece that is a whole token is emitted as is (Llama 3)
  bool byte_fallback = false;  // a character missing from the vocab becomes its <0xXX> tokens
  int32_t unk_id = -1;         // else it becomes this token (-1: it is dropped, as HF does without unk_token)
  bool fuse_unk = false;       // consecutive unknown characters give one unk token
};

class BpeModel final : public TokenModel {
 public:
  BpeModel(std::shared_ptr<const Vocab> vocab, BpeOptions options);

  // Adds the next merge (rank = number of merges added before). Returns false, adding nothing, when a part or
  // their concatenation is not a token; a repeated pair keeps its first rank.
  bool add_merge(std::string_view left, std::string_view right);
  void reserve(size_t n_merges);

  void encode(std::string_view piece, std::vector<int32_t>& out) const override;

 private:
  // Open-addressing table keyed by the (left, right) id pair.
  struct Merge {
    uint64_t key = kEmpty;
    int32_t rank = 0;
    int32_t merged_id = 0;
  };
  static constexpr uint64_t kEmpty = ~0ull;
  static uint64_t pair_key(int32_t left, int32_t right) {
    return (static_cast<uint64_t>(static_cast<uint32_t>(left)) << 32) | static_cast<uint32_t>(right);
  }
  size_t slot_of(uint64_t key) const;
  const Merge* find_merge(int32_t left, int32_t right) const;
  void grow();

  std::shared_ptr<const Vocab> vocab_;
  BpeOptions options_;
  std::array<int32_t, 256> byte_ids_;
  std::vector<Merge> merges_;  // power-of-two size, at most half full
  size_t n_merges_ = 0;
  int32_t n_ranks_ = 0;
};

}  // namespace cai::tok
