// Tokenizer facade: loads HF tokenizer.json or GGUF vocab metadata; encode, decode and streaming decode.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "core/status.h"
#include "tokenizer/added_tokens.h"
#include "tokenizer/decoder.h"
#include "tokenizer/vocab.h"

namespace cai {

namespace tok {
struct HfJsonDocument;
class Normalizer;
class PreTokenizer;
class TokenModel;
}  // namespace tok

class Tokenizer {
 public:
  // tokenizer.json plus (optional: empty path or missing file) tokenizer_config.json for BOS/EOS, add_bos_token
  // and chat_template.
  static Result<std::unique_ptr<Tokenizer>> from_hf_json(const std::string& tokenizer_json_path,
                                                         const std::string& tokenizer_config_path);
  // tokenizer.json text alone (tests, fuzzing); `config_text` is tokenizer_config.json text or empty.
  static Result<std::unique_ptr<Tokenizer>> from_hf_json_text(std::string_view json_text,
                                                              std::string_view config_text = {});
  // GGUF metadata as GgufFile::metadata() gives it (tokenizer.ggml.* keys).
  static Result<std::unique_ptr<Tokenizer>> from_gguf_metadata(const nlohmann::json& metadata);

  ~Tokenizer();
  Tokenizer(const Tokenizer&) = delete;
  Tokenizer& operator=(const Tokenizer&) = delete;

  // Token ids of `text` (invalid UTF-8 is first replaced by U+FFFD). `add_bos` prepends BOS when the model has
  // one; EOS is never added. `parse_special`: special tokens written in the text become their ids.
  std::vector<int32_t> encode(std::string_view text, bool add_bos, bool parse_special = true) const;

  // Text of `ids` as valid UTF-8 (ill-formed byte sequences become U+FFFD). `skip_special` leaves out
  // control/unknown tokens. The first token output loses the SentencePiece dummy-prefix space.
  std::string decode(std::span<const int32_t> ids, bool skip_special = false) const;
  // Raw bytes of one token's piece (no prefix stripping, may be a partial UTF-8 sequence); "" for a bad id.
  std::string token_text(int32_t id) const;

  int32_t bos_id() const { return bos_id_; }  // -1 if none
  int32_t eos_id() const { return eos_id_; }  // -1 if none
  bool add_bos_default() const { return add_bos_; }
  // End of generation: EOS, EOT/EOM and tokens such as <|im_end|>, <|eot_id|>, <｜end▁of▁sentence｜>.
  bool is_eog(int32_t id) const;
  // Every end-of-generation id (eos, eot, eom and known end-of-turn tokens), sorted.
  const std::vector<int32_t>& eog_ids() const { return eog_ids_; }
  bool is_special(int32_t id) const;  // control/unknown/unused: skipped by decode(skip_special)
  int32_t n_vocab() const { return vocab_->size(); }
  // Id of the token whose stored text is exactly `text`.
  std::optional<int32_t> find_token(std::string_view text) const { return vocab_->find(text); }
  std::string bos_text() const { return bos_id_ >= 0 ? token_text(bos_id_) : std::string(); }
  std::string eos_text() const { return eos_id_ >= 0 ? token_text(eos_id_) : std::string(); }
  const std::string& chat_template() const { return chat_template_; }

  // Incremental detokenizer: push ids one at a time; the concatenated outputs plus flush() equal decode() of all
  // ids, and no output ever ends inside a UTF-8 sequence (an incomplete tail is held back until completed).
  class StreamingDecoder {
   public:
    // `continues_text`: the ids follow earlier text (e.g. a prompt), so no prefix space is stripped.
    explicit StreamingDecoder(const Tokenizer& tokenizer, bool skip_special = false, bool continues_text = false);
    std::string push(int32_t id);
    // Whatever is held back, ill-formed bytes as U+FFFD; the decoder can go on after it.
    std::string flush();

   private:
    const Tokenizer& tokenizer_;
    bool skip_special_;
    bool first_;
    std::string pending_;  // bytes of an incomplete UTF-8 sequence
  };

 private:
  Tokenizer();
  static Result<std::unique_ptr<Tokenizer>> build_from_hf(tok::HfJsonDocument& doc, const nlohmann::json& config);
  // Appends the bytes of one token; `first` = nothing was output before it. False (nothing appended) for a token
  // skipped as special or an id out of range.
  bool append_token_bytes(int32_t id, bool first, bool skip_special, std::string& out) const;
  void encode_segment(std::string_view text, bool first_segment, bool parse_special, std::vector<int32_t>& out) const;
  // Fills eog_ids_ from eos/eot/eom and known end-of-turn token texts.
  void collect_eog(std::initializer_list<int32_t> extra_ids);

  std::shared_ptr<tok::Vocab> vocab_;
  tok::AddedTokenMatcher added_;
  std::unique_ptr<tok::Normalizer> normalizer_;       // null: identity
  std::unique_ptr<tok::PreTokenizer> pre_tokenizer_;  // null: one piece per segment
  std::unique_ptr<tok::TokenModel> model_;
  tok::Decoder decoder_ = tok::Decoder::join_with_space();
  int32_t bos_id_ = -1;
  int32_t eos_id_ = -1;
  bool add_bos_ = false;
  std::vector<int32_t> eog_ids_;  // sorted
  std::string chat_template_;
};

}  // namespace cai
