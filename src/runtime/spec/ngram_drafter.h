// Prompt lookup: drafts the tokens that followed the latest earlier occurrence of the sequence's last n tokens in its
// own prompt and output (n from max_n down to min_n). No weights, no state.
#pragma once

#include "runtime/spec/drafter.h"

namespace cai {

// At most k tokens after the latest earlier occurrence of the last n tokens of `tokens`, for the largest n in
// [min_n, max_n] that has one; empty when none does.
std::vector<int32_t> ngram_draft(std::span<const int32_t> tokens, int k, int min_n, int max_n);

class NgramDrafter final : public Drafter {
 public:
  NgramDrafter(int min_n, int max_n) : min_n_(min_n), max_n_(max_n) {}
  bool needs_hidden() const override { return false; }
  Result<std::vector<std::vector<int32_t>>> draft(std::span<const DraftSeq> seqs, const float* hidden) override;

 private:
  int min_n_, max_n_;
};

}  // namespace cai
