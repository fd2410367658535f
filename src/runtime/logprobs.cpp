// token_logprobs: one log-sum-exp pass, then a partial sort for the alternatives.
#include "runtime/logprobs.h"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <vector>

namespace cai {

TokenLogprob token_logprobs(std::span<const float> logits, int32_t token, int n_top, const Tokenizer& tok) {
  const float mx = *std::max_element(logits.begin(), logits.end());
  double sum = 0;
  for (float l : logits) sum += std::exp(static_cast<double>(l - mx));
  const float log_z = mx + static_cast<float>(std::log(sum));
  TokenLogprob out;
  out.token = token;
  out.text = tok.token_text(token);
  out.logprob = logits[static_cast<size_t>(token)] - log_z;
  std::vector<int32_t> idx(logits.size());
  std::iota(idx.begin(), idx.end(), 0);
  const size_t k = std::min(static_cast<size_t>(std::max(0, n_top)), idx.size());
  std::partial_sort(idx.begin(), idx.begin() + static_cast<ptrdiff_t>(k), idx.end(), [&](int32_t a, int32_t b) {
    return logits[static_cast<size_t>(a)] > logits[static_cast<size_t>(b)] ||
           (logits[static_cast<size_t>(a)] == logits[static_cast<size_t>(b)] && a < b);
  });
  for (size_t i = 0; i < k; ++i)
    out.top.push_back({tok.token_text(idx[i]), logits[static_cast<size_t>(idx[i])] - log_z});
  return out;
}

}  // namespace cai
