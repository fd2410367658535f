// Synthetic byte-level BPE vocabulary for random models: GGUF tokenizer keys and HF tokenizer files from one source.
#pragma once

#include <nlohmann/json.hpp>

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "core/status.h"
#include "writers/gguf_writer.h"

namespace cai::mkmodel {

// GGUF token types (docs/design/formats.md#tokenizer-metadata).
enum TokenType : int32_t { kTokenNormal = 1, kTokenControl = 3, kTokenUserDefined = 4, kTokenUnused = 5 };

// Pre-tokenizer regexes of tokenizer.json Split steps (tokenizer data, docs/design/formats.md#pre-tokenizer-regexes Q1
// and L1 in HF's case-insensitive spelling): GGUF tokenizer.ggml.pre "qwen2" and "llama-bpe".
inline constexpr std::string_view kQwen2Regex =
    "(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|"
    "\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+";
inline constexpr std::string_view kLlama3Regex =
    "(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}{1,3}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|"
    "\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+";

struct SyntheticVocab {
  std::vector<std::string> tokens;  // id → text in GPT-2 byte-mapped form (specials raw)
  std::vector<int32_t> types;       // id → TokenType
  std::vector<std::string> merges;  // "left right", rank = index
  int32_t bos_id = -1;              // <|endoftext|>
  int32_t eos_id = -1;              // <|endoftext|>
  int32_t im_start_id = -1;         // <|im_start|>
  int32_t im_end_id = -1;           // <|im_end|>
};

// ids 0..255: the 256 byte tokens; then merges learnt from a built-in English text (each merge adds its result);
// then filler tokens "<tok_N>" (unused) up to n_vocab − 3; the last three ids are the control tokens
// <|endoftext|>, <|im_start|>, <|im_end|>. n_vocab must be at least 259.
Result<SyntheticVocab> make_vocab(int64_t n_vocab);

// tokenizer.* keys: model "gpt2", pre, tokens, token_type, merges, bos/eos/padding ids, add_bos, ChatML template.
void add_gguf_tokenizer(const SyntheticVocab& v, const std::string& pre, bool add_bos, GgufWriter& w);
// tokenizer.json (HF byte-level BPE) and tokenizer_config.json for the same vocabulary.
nlohmann::ordered_json hf_tokenizer_json(const SyntheticVocab& v, const std::string& pre);
nlohmann::ordered_json hf_tokenizer_config(const SyntheticVocab& v, bool add_bos);

}  // namespace cai::mkmodel
