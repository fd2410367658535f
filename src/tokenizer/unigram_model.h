// Unigram language-model tokenization (HF `Unigram`): Viterbi search for the best-scoring segmentation.
#pragma once

#include <array>
#include <memory>
#include <vector>

#include "tokenizer/token_model.h"
#include "tokenizer/vocab.h"

namespace cai::tok {

class UnigramModel final : public TokenModel {
 public:
  // scores[id] = log-probability of token id. A character no token covers scores (lowest score - 10), as HF
  // does, and becomes `unk_id` (consecutive ones fused) or, with byte_fallback, its <0xXX> tokens.
  UnigramModel(std::shared_ptr<const Vocab> vocab, std::vector<float> scores, int32_t unk_id, bool byte_fallback);

  void encode(std::string_view piece, std::vector<int32_t>& out) const override;

 private:
  std::shared_ptr<const Vocab> vocab_;
  std::vector<float> scores_;
  int32_t unk_id_;
  bool byte_fallback_;
  std::array<int32_t, 256> byte_ids_;
  float unk_score_ = 0.0f;
  size_t max_piece_bytes_ = 1;
};

}  // namespace cai::tok
