// Sampler implementation: penalties → greedy or (temperature → top-k → softmax → top-p → min-p → draw).
#include "runtime/sampler.h"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <unordered_map>
#include <vector>

namespace cai {

int32_t argmax(std::span<const float> logits) {
  int32_t best = 0;
  for (size_t i = 1; i < logits.size(); ++i)
    if (logits[i] > logits[static_cast<size_t>(best)]) best = static_cast<int32_t>(i);
  return best;
}

void Sampler::apply_penalties(std::span<float> logits, std::span<const int32_t> history) const {
  if (p_.repetition_penalty == 1.0f && p_.presence_penalty == 0.0f && p_.frequency_penalty == 0.0f) return;
  std::unordered_map<int32_t, int> counts;
  for (int32_t t : history)
    if (t >= 0 && static_cast<size_t>(t) < logits.size()) ++counts[t];
  for (const auto& [t, c] : counts) {
    float& l = logits[static_cast<size_t>(t)];
    if (p_.repetition_penalty != 1.0f) l = l > 0 ? l / p_.repetition_penalty : l * p_.repetition_penalty;
    l -= p_.presence_penalty + p_.frequency_penalty * static_cast<float>(c);
  }
}

int32_t Sampler::sample(std::span<float> logits, std::span<const int32_t> history) {
  apply_penalties(logits, history);
  if (p_.temperature <= 0.0f || p_.top_k == 1) return argmax(logits);
  std::vector<int32_t> idx(logits.size());
  std::iota(idx.begin(), idx.end(), 0);
  auto by_logit = [&](int32_t a, int32_t b) {
    return logits[static_cast<size_t>(a)] > logits[static_cast<size_t>(b)] ||
           (logits[static_cast<size_t>(a)] == logits[static_cast<size_t>(b)] && a < b);
  };
  size_t keep = idx.size();
  if (p_.top_k > 0 && static_cast<size_t>(p_.top_k) < keep) {
    keep = static_cast<size_t>(p_.top_k);
    std::partial_sort(idx.begin(), idx.begin() + static_cast<ptrdiff_t>(keep), idx.end(), by_logit);
  } else {
    std::sort(idx.begin(), idx.end(), by_logit);
  }
  idx.resize(keep);
  std::vector<double> probs(keep);
  const double mx = logits[static_cast<size_t>(idx[0])];
  double sum = 0;
  for (size_t i = 0; i < keep; ++i) sum += probs[i] = std::exp((logits[static_cast<size_t>(idx[i])] - mx) / p_.temperature);
  for (double& p : probs) p /= sum;
  size_t cut = keep;
  if (p_.top_p < 1.0f) {
    double acc = 0;
    for (size_t i = 0; i < keep; ++i) {
      acc += probs[i];
      if (acc >= p_.top_p) {
        cut = i + 1;
        break;
      }
    }
  }
  if (p_.min_p > 0.0f) {
    size_t i = 1;
    while (i < cut && probs[i] >= p_.min_p * probs[0]) ++i;
    cut = i;
  }
  std::discrete_distribution<size_t> dist(probs.begin(), probs.begin() + static_cast<ptrdiff_t>(cut));
  return idx[dist(rng_)];
}

}  // namespace cai
