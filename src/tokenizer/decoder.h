// Decoders: token text → bytes, one token at a time (HF ByteLevel/Metaspace/Replace/ByteFallback/Fuse/Strip/Sequence).
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "core/status.h"
#include "tokenizer/pattern.h"

namespace cai::tok {

// Every decoder this project meets works token by token, except that a few leading characters of the whole
// output are stripped (SentencePiece's dummy prefix): HF Strip after Fuse, and Metaspace on the first token.
// Both are modelled as "strip on the first token that is output", which keeps streaming equal to decoding all.
class Decoder {
 public:
  enum class StepKind { kByteLevel, kReplace, kByteFallback, kStrip };
  struct Step {
    StepKind kind;
    Pattern pattern = Pattern::literal("");  // kReplace
    std::string content;                     // kReplace: replacement; kStrip: the character stripped
    size_t n_strip = 0;                      // kStrip: at most this many leading `content` characters
  };

  // No steps: tokens are joined with a space, as HF does when tokenizer.json has no decoder.
  static Decoder join_with_space();
  static Decoder from_steps(std::vector<Step> steps);
  // GGUF `gpt2`: byte-level text. GGUF `llama`: ▁ → space, <0xXX> → byte, the first leading space stripped.
  static Decoder byte_level();
  static Decoder sentencepiece(bool strip_leading_space);

  // Appends the bytes of a normal or byte token's text. `first`: no token was output before it.
  void decode_token(std::string_view text, bool first, std::string& out) const;

 private:
  std::vector<Step> steps_;
  bool join_with_space_ = false;
};

// From the "decoder" object of tokenizer.json (null: join with spaces).
Result<Decoder> decoder_from_json(const nlohmann::json& j);

}  // namespace cai::tok
