// Sampler: turns a row of logits into a token (logit bias, penalties, greedy, temperature, top-k, top-p, min-p,
// seeded RNG).
#pragma once

#include <cstdint>
#include <random>
#include <span>
#include <utility>
#include <vector>

namespace cai {

struct SamplingParams {
  float temperature = 1.0f;         // 0 = greedy (argmax, ties → lowest id)
  int top_k = 0;                    // 0 = off
  float top_p = 1.0f;               // 1 = off
  float min_p = 0.0f;               // 0 = off; keep tokens with p >= min_p * p_max
  float repetition_penalty = 1.0f;  // >1 discourages tokens already seen (CTRL-style: divide positive logits)
  float presence_penalty = 0.0f;    // subtract once per seen token (OpenAI)
  float frequency_penalty = 0.0f;   // subtract per occurrence (OpenAI)
  uint64_t seed = 0;
  // (token id, bias) added to the logits before anything else looks at them (greedy too); -100 bans the token.
  std::vector<std::pair<int32_t, float>> logit_bias{};
};

// A bias at or below this bans its token (the logit becomes -infinity), as OpenAI documents for -100.
inline constexpr float kBanBias = -100.0f;

class Sampler {
 public:
  explicit Sampler(const SamplingParams& p) : p_(p), rng_(p.seed) {}
  // `logits` is modified (penalties, temperature). `history` = tokens seen so far (prompt + generated).
  int32_t sample(std::span<float> logits, std::span<const int32_t> history);
  const SamplingParams& params() const { return p_; }

 private:
  void apply_penalties(std::span<float> logits, std::span<const int32_t> history) const;
  void apply_bias(std::span<float> logits) const;

  SamplingParams p_;
  std::mt19937_64 rng_;
};

// Index of the largest value (lowest index on ties).
int32_t argmax(std::span<const float> logits);

}  // namespace cai
