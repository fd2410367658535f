// Prompt lookup drafting: a backward scan for the latest earlier match of the sequence's suffix.
#include "runtime/spec/ngram_drafter.h"

#include <algorithm>

namespace cai {

std::vector<int32_t> ngram_draft(std::span<const int32_t> tokens, int k, int min_n, int max_n) {
  const int len = static_cast<int>(tokens.size());
  if (k <= 0) return {};
  for (int n = std::min(max_n, len - 1); n >= std::max(1, min_n); --n) {
    const std::span<const int32_t> suffix = tokens.last(static_cast<size_t>(n));
    // The match must end before the suffix does, so that at least one token follows it.
    for (int end = len - 1; end >= n; --end) {
      if (!std::equal(suffix.begin(), suffix.end(), tokens.begin() + (end - n))) continue;
      const int n_take = std::min(k, len - end);
      return {tokens.begin() + end, tokens.begin() + end + n_take};
    }
  }
  return {};
}

Result<std::vector<std::vector<int32_t>>> NgramDrafter::draft(std::span<const DraftSeq> seqs, const float*) {
  std::vector<std::vector<int32_t>> out;
  out.reserve(seqs.size());
  for (const DraftSeq& s : seqs) out.push_back(ngram_draft(s.tokens, s.max_draft, min_n_, max_n_));
  return out;
}

}  // namespace cai
