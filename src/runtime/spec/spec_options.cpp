// SpecOptions: method names and checks.
#include "runtime/spec/spec_options.h"

namespace cai {

const char* spec_method_name(SpecMethod m) {
  switch (m) {
    case SpecMethod::kNgram: return "ngram";
    case SpecMethod::kMtp: return "mtp";
    case SpecMethod::kDraft: return "draft";
    case SpecMethod::kOff: break;
  }
  return "off";
}

Result<SpecMethod> parse_spec_method(std::string_view name) {
  for (SpecMethod m : {SpecMethod::kOff, SpecMethod::kNgram, SpecMethod::kMtp, SpecMethod::kDraft})
    if (name == spec_method_name(m)) return m;
  return invalid_argument("--spec '{}': expected off, ngram, mtp or draft", name);
}

Status validate(const SpecOptions& o) {
  if (o.method == SpecMethod::kOff) return {};
  if (o.tokens < 1 || o.tokens > SpecOptions::kMaxTokens)
    return invalid_argument("--spec-tokens {}: must be between 1 and {}", o.tokens, SpecOptions::kMaxTokens);
  if (o.ngram_min < 1 || o.ngram_max < o.ngram_min)
    return invalid_argument("--spec-ngram {},{}: need 1 <= min <= max", o.ngram_min, o.ngram_max);
  if (o.max_batch < 0) return invalid_argument("--spec-max-batch {}: must be 0 (always) or more", o.max_batch);
  return {};
}

}  // namespace cai
