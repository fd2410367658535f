// TokenModel: the step that turns one pre-tokenized piece into token ids (BPE, SentencePiece, Unigram).
#pragma once

#include <cstdint>
#include <string_view>
#include <vector>

namespace cai::tok {

class TokenModel {
 public:
  virtual ~TokenModel() = default;
  // Appends the ids of `piece` (valid UTF-8, non-empty) to `out`.
  virtual void encode(std::string_view piece, std::vector<int32_t>& out) const = 0;
};

}  // namespace cai::tok
