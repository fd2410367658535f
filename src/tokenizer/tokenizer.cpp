// Tokenizer facade: loads HF tokenizer.json or GGUF vocab metadata; encode, decode and streaming decode.
#include "tokenizer/tokenizer.h"

#include <algorithm>

#include "tokenizer/normalizer.h"
#include "tokenizer/pre_tokenizer.h"
#include "tokenizer/token_model.h"
#include "tokenizer/unicode.h"

namespace cai {

using tok::TokenKind;

Tokenizer::Tokenizer() : vocab_(std::make_shared<tok::Vocab>()) {}
Tokenizer::~Tokenizer() = default;

std::vector<int32_t> Tokenizer::encode(std::string_view text, bool add_bos, bool parse_special) const {
  std::vector<int32_t> out;
  out.reserve(text.size() / 3 + 2);
  if (add_bos && bos_id_ >= 0) out.push_back(bos_id_);
  std::string repaired;
  if (!tok::is_valid_utf8(text)) {
    repaired = tok::to_valid_utf8(text);
    text = repaired;
  }
  bool first_segment = true;
  for (const tok::TextOrToken& part : added_.split(text, parse_special, /*normalized_stage=*/false)) {
    if (part.id >= 0)
      out.push_back(part.id);
    else
      encode_segment(part.text, first_segment, parse_special, out);
    first_segment = false;
  }
  return out;
}

// One stretch of raw text between added tokens: normalize, split again on normalized added tokens,
// pre-tokenize, run the model on each piece.
void Tokenizer::encode_segment(std::string_view text, bool first_segment, bool parse_special,
                               std::vector<int32_t>& out) const {
  std::string normalized(text);
  if (normalizer_) normalizer_->apply(normalized);
  std::vector<std::string> pieces;
  for (const tok::TextOrToken& part : added_.split(normalized, parse_special, /*normalized_stage=*/true)) {
    if (part.id >= 0) {
      out.push_back(part.id);
    } else {
      pieces.assign(1, std::string(part.text));
      if (pre_tokenizer_) pre_tokenizer_->split(pieces, first_segment);
      for (const std::string& piece : pieces)
        if (!piece.empty()) model_->encode(piece, out);
    }
    first_segment = false;
  }
}

bool Tokenizer::is_special(int32_t id) const {
  if (id < 0 || id >= vocab_->size()) return false;
  const TokenKind kind = vocab_->kind(id);
  return kind == TokenKind::kControl || kind == TokenKind::kUnknown || kind == TokenKind::kUnused;
}

bool Tokenizer::append_token_bytes(int32_t id, bool first, bool skip_special, std::string& out) const {
  if (id < 0 || id >= vocab_->size()) return false;
  const std::string& text = vocab_->text(id);
  if (is_special(id)) {
    if (skip_special) return false;
    out += text;
  } else if (vocab_->kind(id) == TokenKind::kUserDefined) {
    out += text;  // added / user-defined tokens are stored as raw text
  } else {
    decoder_.decode_token(text, first, out);
  }
  return true;
}

std::string Tokenizer::decode(std::span<const int32_t> ids, bool skip_special) const {
  std::string bytes;
  bool first = true;
  for (int32_t id : ids)
    if (append_token_bytes(id, first, skip_special, bytes)) first = false;
  return tok::to_valid_utf8(bytes);
}

std::string Tokenizer::token_text(int32_t id) const {
  std::string out;
  append_token_bytes(id, /*first=*/false, /*skip_special=*/false, out);
  return out;
}

bool Tokenizer::is_eog(int32_t id) const { return std::binary_search(eog_ids_.begin(), eog_ids_.end(), id); }

void Tokenizer::collect_eog(std::initializer_list<int32_t> extra_ids) {
  static const char* const kEndTexts[] = {"<|eot_id|>",
                                          "<|eom_id|>",
                                          "<|im_end|>",
                                          "<|end_of_text|>",
                                          "<|endoftext|>",
                                          "<\xEF\xBD\x9C"
                                          "end\xE2\x96\x81of\xE2\x96\x81sentence\xEF\xBD\x9C>",
                                          "<|end|>",
                                          "<end_of_turn>",
                                          "<|EOT|>",
                                          "</s>"};
  eog_ids_.clear();
  if (eos_id_ >= 0) eog_ids_.push_back(eos_id_);
  for (int32_t id : extra_ids)
    if (id >= 0 && id < vocab_->size()) eog_ids_.push_back(id);
  for (const char* text : kEndTexts) {
    const auto id = vocab_->find(text);
    if (id && vocab_->kind(*id) != TokenKind::kNormal) eog_ids_.push_back(*id);
  }
  std::sort(eog_ids_.begin(), eog_ids_.end());
  eog_ids_.erase(std::unique(eog_ids_.begin(), eog_ids_.end()), eog_ids_.end());
}

Tokenizer::StreamingDecoder::StreamingDecoder(const Tokenizer& tokenizer, bool skip_special, bool continues_text)
    : tokenizer_(tokenizer), skip_special_(skip_special), first_(!continues_text) {}

std::string Tokenizer::StreamingDecoder::push(int32_t id) {
  if (!tokenizer_.append_token_bytes(id, first_, skip_special_, pending_)) return {};
  first_ = false;
  std::string out;
  pending_.erase(0, tok::append_valid_utf8(pending_, out, /*final=*/false));
  return out;
}

std::string Tokenizer::StreamingDecoder::flush() {
  std::string out;
  tok::append_valid_utf8(pending_, out, /*final=*/true);
  pending_.clear();
  return out;
}

}  // namespace cai
