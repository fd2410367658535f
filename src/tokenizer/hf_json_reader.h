// One-pass reader of HF tokenizer.json: the big BPE vocab and merges stream into flat vectors, the rest is a DOM.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/status.h"

namespace cai::tok {

struct HfJsonDocument {
  nlohmann::json dom;             // everything except the streamed parts below
  bool has_vocab_object = false;  // model.vocab was a {text: id} object (BPE), streamed into `vocab`
  std::vector<std::pair<std::string, int64_t>> vocab;
  bool has_merges = false;  // model.merges was an array, streamed into `merges`
  std::vector<std::pair<std::string, std::string>> merges;
};

// Parses `text`. Building a DOM for 150k vocab entries and 280k merges costs several times the parse itself,
// so those two are read straight into vectors. A merge is "left right" (split at the first space after the
// first character) or ["left", "right"].
Result<HfJsonDocument> read_hf_tokenizer_json(std::string_view text);

}  // namespace cai::tok
