// Normalizers of HF tokenizer.json (NFC/NFD/NFKC/NFKD, Lowercase, Prepend, Replace, Strip, Sequence).
#pragma once

#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "core/status.h"

namespace cai::tok {

class Normalizer {
 public:
  virtual ~Normalizer() = default;
  // Rewrites one text segment (valid UTF-8 in, valid UTF-8 out).
  virtual void apply(std::string& text) const = 0;
};

// Prepend `prefix` to non-empty text (SentencePiece's dummy space prefix in its ▁ form).
std::unique_ptr<Normalizer> make_prepend_normalizer(std::string prefix);
// Replace every occurrence of `from` by `to`.
std::unique_ptr<Normalizer> make_literal_replace_normalizer(std::string from, std::string to);
std::unique_ptr<Normalizer> make_sequence_normalizer(std::vector<std::unique_ptr<Normalizer>> parts);

// From the "normalizer" object of tokenizer.json; null JSON gives a null normalizer (identity).
Result<std::unique_ptr<Normalizer>> normalizer_from_json(const nlohmann::json& j);

}  // namespace cai::tok
