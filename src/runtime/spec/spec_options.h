// SpecOptions: which speculative-decoding method a server (or CLI run) uses and how far it drafts.
#pragma once

#include <string>
#include <string_view>

#include "core/status.h"

namespace cai {

enum class SpecMethod {
  kOff,
  kNgram,  // prompt lookup in the sequence's own tokens
  kMtp,    // DeepSeek-V3/R1's multi-token-prediction module
  kDraft,  // a smaller model with the same vocabulary
};

// "off", "ngram", "mtp", "draft".
const char* spec_method_name(SpecMethod m);
// The same names back; anything else is invalid_argument listing them.
Result<SpecMethod> parse_spec_method(std::string_view name);

struct SpecOptions {
  SpecMethod method = SpecMethod::kOff;
  int tokens = 3;     // K: drafted tokens verified per step and sequence (1..kMaxTokens)
  int ngram_min = 1;  // prompt lookup: the shortest suffix matched
  int ngram_max = 4;  // and the longest (tried first)
  // Draft only while at most this many sequences run (0: always). Where a full batch already keeps the device busy
  // (a CPU at 16 sequences), verifying more positions costs about as much as computing them.
  int max_batch = 0;
  std::string draft_model;  // kDraft: the draft model's path (the CLI loads it)
  static constexpr int kMaxTokens = 16;
};

// Checks the numbers (K in 1..kMaxTokens, 1 <= ngram_min <= ngram_max, max_batch >= 0).
Status validate(const SpecOptions& o);

}  // namespace cai
