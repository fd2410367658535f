// Pre-tokenizers: cut normalized text into pieces before the model (HF Split/ByteLevel/Metaspace/Digits/... and
// Sequence).
#pragma once

#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "core/status.h"
#include "tokenizer/pattern.h"

namespace cai::tok {

// The GPT-2 pre-tokenizer regex (HF ByteLevel use_regex, GGUF pre `gpt-2`).
extern const char kGpt2Regex[];

class PreTokenizer {
 public:
  virtual ~PreTokenizer() = default;
  // Rewrites `pieces` (each valid UTF-8) into finer pieces. `first_segment` is true when the pieces start at the
  // beginning of the encoded text (no added token before them); Metaspace's "first" prepend scheme needs it.
  virtual void split(std::vector<std::string>& pieces, bool first_segment) const = 0;
};

// HF SplitDelimiterBehavior: what happens to the matches of a Split pattern.
enum class SplitBehavior { kRemoved, kIsolated, kMergedWithPrevious, kMergedWithNext, kContiguous };

std::unique_ptr<PreTokenizer> make_split_pre_tokenizer(Pattern pattern, SplitBehavior behavior, bool invert);
// Maps each piece to GPT-2 byte-level form; optionally prepends a space and first splits with the GPT-2 regex.
std::unique_ptr<PreTokenizer> make_byte_level_pre_tokenizer(bool add_prefix_space, bool use_regex);
std::unique_ptr<PreTokenizer> make_sequence_pre_tokenizer(std::vector<std::unique_ptr<PreTokenizer>> parts);

// From the "pre_tokenizer" object of tokenizer.json; null JSON gives a null pre-tokenizer (one piece per segment).
Result<std::unique_ptr<PreTokenizer>> pre_tokenizer_from_json(const nlohmann::json& j);

}  // namespace cai::tok
