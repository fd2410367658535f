// Sampler implementation: penalties and logit bias → greedy, or temperature → top-k → top-p → min-p → draw.
// Only what needs an order is sorted: top-k partially sorts k ids, top-p selects and sorts a growing prefix until it
// holds the nucleus, and plain temperature / min-p sampling draws over the vocabulary in id order without sorting
// (draw_in_id_order).
#include "runtime/sampler.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>
#include <unordered_map>
#include <vector>

#include "core/exp_poly.h"

namespace cai {

namespace {

// First prefix length tried when top-p needs the largest logits in order; grown ×8 until it holds the nucleus.
constexpr size_t kFirstNucleusGuess = 256;

// Tokens per block of the unordered draw: it walks the blocks' sums, then one block.
constexpr size_t kDrawBlock = 1024;
// Partial sums per block (float lanes a loop of them vectorises over).
constexpr size_t kDrawLanes = 8;

// A draw over the whole vocabulary in id order (no top-k or top-p), weights w[i] = exp((l[i] - mx) · inv_t), those
// under min_p (the top token weighs 1) set to 0. The weights and each block's sum come in one vectorised pass; the
// draw then walks the block sums to the block where the running sum passes u · total and walks that block, instead
// of two dependent chains of double adds over the whole vocabulary (the mass, then the walk), which would take most
// of a draw's time.
int32_t draw_in_id_order(std::span<const float> logits, float mx, float inv_t, float min_p, std::mt19937_64& rng) {
  const size_t vocab = logits.size(), blocks = (vocab + kDrawBlock - 1) / kDrawBlock;
  thread_local std::vector<float> weight;
  thread_local std::vector<double> block_mass;
  weight.resize(vocab);
  block_mass.resize(blocks);
  double total = 0;
  for (size_t b = 0; b < blocks; ++b) {
    const size_t i0 = b * kDrawBlock, i1 = std::min(vocab, i0 + kDrawBlock);
    float lanes[kDrawLanes] = {};
    size_t i = i0;
    for (; i + kDrawLanes <= i1; i += kDrawLanes) {
      for (size_t k = 0; k < kDrawLanes; ++k) {
        const float w = exp_poly((logits[i + k] - mx) * inv_t);
        weight[i + k] = w < min_p ? 0.0f : w;
        lanes[k] += weight[i + k];
      }
    }
    for (; i < i1; ++i) {
      const float w = exp_poly((logits[i] - mx) * inv_t);
      weight[i] = w < min_p ? 0.0f : w;
      lanes[0] += weight[i];
    }
    double sum = 0;
    for (float l : lanes) sum += l;
    block_mass[b] = sum;
    total += sum;
  }
  const double u = std::uniform_real_distribution<double>(0.0, 1.0)(rng) * total;
  double before = 0;  // the sum of the blocks before b
  for (size_t b = 0; b < blocks; ++b) {
    if (before + block_mass[b] > u) {
      double acc = before;
      for (size_t i = b * kDrawBlock; i < std::min(vocab, (b + 1) * kDrawBlock); ++i) {
        acc += weight[i];
        if (acc > u) return static_cast<int32_t>(i);
      }
    }
    before += block_mass[b];  // rounding left u past this block's walk: on to the next
  }
  // Rounding left u at the very end: the last token that has any weight (the top token always has).
  size_t last = vocab - 1;
  while (last > 0 && weight[last] == 0) --last;
  return static_cast<int32_t>(last);
}

}  // namespace

int32_t argmax(std::span<const float> logits) {
  // The largest value first, in kLanes independent running maxima (vector max instructions; one running best is a
  // chain of dependent compares, which shows in a 16-stream serving step over a 150k vocabulary: `cai serve` under
  // bench/load_bench.mjs), then its first position.
  // NaNs never win a compare, as in a plain scan; a NaN first value stays the answer (nothing compares above it).
  const size_t n = logits.size();
  if (n == 0) return 0;
  constexpr size_t kLanes = 16;
  float lane[kLanes];
  std::fill(lane, lane + kLanes, logits[0]);
  size_t i = 0;
  for (; i + kLanes <= n; i += kLanes)
    for (size_t k = 0; k < kLanes; ++k) lane[k] = logits[i + k] > lane[k] ? logits[i + k] : lane[k];
  float mx = logits[0];
  for (float v : lane) mx = v > mx ? v : mx;
  for (; i < n; ++i) mx = logits[i] > mx ? logits[i] : mx;
  const auto at = std::find(logits.begin(), logits.end(), mx);
  return at == logits.end() ? 0 : static_cast<int32_t>(at - logits.begin());
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

void Sampler::apply_bias(std::span<float> logits) const {
  for (const auto& [t, bias] : p_.logit_bias) {
    if (t < 0 || static_cast<size_t>(t) >= logits.size()) continue;
    float& l = logits[static_cast<size_t>(t)];
    l = bias <= kBanBias ? -std::numeric_limits<float>::infinity() : l + bias;
  }
}

int32_t Sampler::sample(std::span<float> logits, std::span<const int32_t> history) {
  apply_penalties(logits, history);
  apply_bias(logits);
  const int32_t top = argmax(logits);
  if (p_.temperature <= 0.0f || p_.top_k == 1) return top;

  // Unnormalized probabilities exp((l - max) / T): the most likely token weighs exactly 1.
  const size_t vocab = logits.size();
  const float mx = logits[static_cast<size_t>(top)], inv_t = 1.0f / p_.temperature;
  if ((p_.top_k <= 0 || static_cast<size_t>(p_.top_k) >= vocab) && p_.top_p >= 1.0f)
    return draw_in_id_order(logits, mx, inv_t, p_.min_p, rng_);
  thread_local std::vector<float> weight;
  thread_local std::vector<int32_t> ids;
  weight.resize(vocab);
  // exp_poly: a vectorised loop, where a libm call per logit shows in `cai serve`'s profile at 16 streams.
  for (size_t i = 0; i < vocab; ++i) weight[i] = exp_poly((logits[i] - mx) * inv_t);
  auto by_logit = [&](int32_t a, int32_t b) {
    const float la = logits[static_cast<size_t>(a)], lb = logits[static_cast<size_t>(b)];
    return la > lb || (la == lb && a < b);
  };
  auto mass = [&](size_t n) {
    double s = 0;
    for (size_t i = 0; i < n; ++i) s += weight[static_cast<size_t>(ids[i])];
    return s;
  };

  // Candidates: ids[0, keep). Fewer than the vocabulary only after top-k, which sorts them by descending logit.
  ids.resize(vocab);
  std::iota(ids.begin(), ids.end(), 0);
  size_t keep = vocab;
  if (p_.top_k > 0 && static_cast<size_t>(p_.top_k) < vocab) {
    keep = static_cast<size_t>(p_.top_k);
    std::partial_sort(ids.begin(), ids.begin() + static_cast<ptrdiff_t>(keep), ids.end(), by_logit);
  }
  if (p_.top_p < 1.0f) {
    const double target = p_.top_p * mass(keep);
    size_t n_sorted = keep < vocab ? keep : 0;  // top-k's sorted prefix
    for (size_t guess = kFirstNucleusGuess; n_sorted < keep; guess *= 8) {
      n_sorted = std::min(keep, guess);
      const auto mid = ids.begin() + static_cast<ptrdiff_t>(n_sorted);
      if (n_sorted < vocab) std::nth_element(ids.begin(), mid - 1, ids.end(), by_logit);
      std::sort(ids.begin(), mid, by_logit);
      if (mass(n_sorted) >= target) break;
    }
    double acc = 0;
    for (size_t i = 0; i < n_sorted; ++i) {
      acc += weight[static_cast<size_t>(ids[i])];
      if (acc >= target) {
        keep = i + 1;
        break;
      }
    }
  }
  // Here top-k or top-p has sorted the candidates (without either, draw_in_id_order drew): min-p cuts their tail.
  if (p_.min_p > 0.0f) {  // relative to the top token's weight, which is 1
    size_t i = 1;
    while (i < keep && weight[static_cast<size_t>(ids[i])] >= p_.min_p) ++i;
    keep = i;
  }

  // Draw: walk the candidates until the running weight passes u · total.
  const double u = std::uniform_real_distribution<double>(0.0, 1.0)(rng_) * mass(keep);
  double acc = 0;
  for (size_t i = 0; i < keep; ++i) {
    acc += weight[static_cast<size_t>(ids[i])];
    if (acc > u) return ids[i];
  }
  // Rounding left u at the very end: the last candidate that has any weight (a banned token has none).
  size_t last = keep - 1;
  while (last > 0 && weight[static_cast<size_t>(ids[last])] == 0) --last;
  return ids[last];
}

}  // namespace cai
