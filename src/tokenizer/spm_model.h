// SentencePiece-style BPE with scores, as llama.cpp runs GGUF `llama` vocabularies (highest-score pair first).
#pragma once

#include <array>
#include <memory>
#include <vector>

#include "tokenizer/token_model.h"
#include "tokenizer/vocab.h"

namespace cai::tok {

class SpmModel final : public TokenModel {
 public:
  // scores[id] ranks merges (higher first). `unk_id` (-1: none) stands for a character that neither the vocab
  // nor its byte tokens can spell.
  SpmModel(std::shared_ptr<const Vocab> vocab, std::vector<float> scores, int32_t unk_id);

  // Text is expected with spaces already escaped to ▁ (the normalizer does it).
  void encode(std::string_view piece, std::vector<int32_t>& out) const override;

 private:
  void emit_symbol(std::string_view text, std::vector<int32_t>& out) const;

  std::shared_ptr<const Vocab> vocab_;
  std::vector<float> scores_;
  int32_t unk_id_;
  std::array<int32_t, 256> byte_ids_;
};

}  // namespace cai::tok
