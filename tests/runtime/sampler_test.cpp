// Sampler: greedy ties, penalties, logit bias, seeded determinism, and the drawn frequencies / candidate sets of
// temperature, top-k, top-p (including a nucleus far wider than the first sorted guess) and min-p against a
// brute-force sort.
#include "runtime/sampler.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <numeric>
#include <random>
#include <set>
#include <vector>

namespace cai {
namespace {

std::map<int32_t, double> frequencies(const SamplingParams& p, const std::vector<float>& logits, int n_draws) {
  Sampler s(p);
  std::map<int32_t, double> f;
  for (int i = 0; i < n_draws; ++i) {
    std::vector<float> work = logits;
    f[s.sample(work, {})] += 1.0 / n_draws;
  }
  return f;
}

const std::vector<float> kThree = {std::log(0.5f), std::log(0.3f), std::log(0.2f)};

TEST(Sampler, GreedyTakesTheLowestIdOfTheLargestLogit) {
  Sampler s({.temperature = 0.0f});
  std::vector<float> l = {0.1f, 3.0f, 3.0f, -1.0f};
  EXPECT_EQ(s.sample(l, {}), 1);
  Sampler top1({.temperature = 1.0f, .top_k = 1});
  EXPECT_EQ(top1.sample(l, {}), 1);
}

// argmax against a plain first-best scan: random rows of every length around its 16-lane step, ties placed before and
// after the lanes' boundaries, ±0, infinities and NaNs (which never win; a NaN first value is kept, as a scan does).
TEST(Sampler, ArgmaxIsTheFirstLargestValue) {
  const auto scan = [](const std::vector<float>& v) {
    size_t best = 0;
    for (size_t i = 1; i < v.size(); ++i)
      if (v[i] > v[best]) best = i;
    return static_cast<int32_t>(best);
  };
  std::mt19937 rng(7);
  std::uniform_int_distribution<int> small(-3, 3);
  const float nan = std::numeric_limits<float>::quiet_NaN(), inf = std::numeric_limits<float>::infinity();
  for (size_t n = 1; n <= 70; ++n) {
    for (int trial = 0; trial < 20; ++trial) {
      std::vector<float> v(n);
      for (float& x : v) x = static_cast<float>(small(rng));  // few distinct values: many ties
      if (trial % 5 == 1) v[rng() % n] = nan;
      if (trial % 5 == 2) v[rng() % n] = -0.0f;
      if (trial % 5 == 3) v[rng() % n] = inf;
      if (trial % 5 == 4) std::fill(v.begin(), v.end(), -inf);
      EXPECT_EQ(argmax(v), scan(v)) << "n " << n << " trial " << trial;
    }
  }
  std::vector<float> first_nan = {nan, 1.0f, 2.0f};
  EXPECT_EQ(argmax(first_nan), 0);
  std::vector<float> big(151936, -1.0f);
  big[151935] = 4.0f;
  big[100003] = 4.0f;
  EXPECT_EQ(argmax(big), 100003);
  EXPECT_EQ(argmax(std::vector<float>{}), 0);
}

TEST(Sampler, PenaltiesChangeTheGreedyChoice) {
  std::vector<int32_t> seen = {0};
  std::vector<float> l = {2.0f, 1.5f, 0.0f};
  EXPECT_EQ(Sampler({.temperature = 0.0f, .repetition_penalty = 2.0f}).sample(l, seen), 1);  // 2 → 1
  std::vector<int32_t> twice = {0, 0};
  l = {1.0f, 0.5f};
  EXPECT_EQ(Sampler({.temperature = 0.0f, .frequency_penalty = 0.3f}).sample(l, twice), 1);  // 1 − 2·0.3
  l = {1.0f, 0.5f};
  EXPECT_EQ(Sampler({.temperature = 0.0f, .presence_penalty = 0.4f}).sample(l, twice), 0);  // 1 − 0.4 > 0.5
  l = {1.0f, 0.5f};
  EXPECT_EQ(Sampler({.temperature = 0.0f, .presence_penalty = 0.6f}).sample(l, twice), 1);
}

TEST(Sampler, LogitBiasShiftsAndBans) {
  std::vector<float> l = {2.0f, 1.5f, 0.0f};
  EXPECT_EQ(Sampler({.temperature = 0.0f, .logit_bias = {{0, -100.0f}}}).sample(l, {}), 1);  // banned under greedy
  l = {2.0f, 1.5f, 0.0f};
  EXPECT_EQ(Sampler({.temperature = 0.0f, .logit_bias = {{2, 2.5f}}}).sample(l, {}), 2);
  l = {2.0f, 1.5f, 0.0f};
  EXPECT_EQ(Sampler({.temperature = 0.0f, .logit_bias = {{1, 0.4f}}}).sample(l, {}), 0);  // 1.9 < 2
  // Sampled: a banned token is never drawn, however likely it was.
  auto f = frequencies({.temperature = 1.0f, .seed = 3, .logit_bias = {{0, -100.0f}}}, kThree, 20000);
  EXPECT_EQ(f.count(0), 0u);
  EXPECT_NEAR(f[1], 0.3 / 0.5, 0.015);
  auto only = frequencies({.temperature = 1.0f, .top_p = 0.9f, .seed = 4, .logit_bias = {{0, -100.0f}, {1, -100.0f}}},
                          kThree, 1000);
  EXPECT_EQ(only.size(), 1u);
  EXPECT_EQ(only.count(2), 1u);
}

TEST(Sampler, SameSeedSameDrawsOtherSeedOtherDraws) {
  std::vector<float> flat(1000, 0.0f);
  auto draws = [&](uint64_t seed) {
    Sampler s({.temperature = 1.0f, .seed = seed});
    std::vector<int32_t> out;
    for (int i = 0; i < 50; ++i) {
      std::vector<float> w = flat;
      out.push_back(s.sample(w, {}));
    }
    return out;
  };
  EXPECT_EQ(draws(7), draws(7));
  EXPECT_NE(draws(7), draws(8));
}

TEST(Sampler, FrequenciesFollowTheTemperedSoftmax) {
  auto f = frequencies({.temperature = 1.0f, .seed = 1}, kThree, 40000);
  EXPECT_NEAR(f[0], 0.5, 0.015);
  EXPECT_NEAR(f[1], 0.3, 0.015);
  EXPECT_NEAR(f[2], 0.2, 0.015);
  // T = 0.5 squares the probabilities: 0.25 : 0.09 : 0.04.
  auto g = frequencies({.temperature = 0.5f, .seed = 2}, kThree, 40000);
  EXPECT_NEAR(g[0], 0.25 / 0.38, 0.015);
  EXPECT_NEAR(g[1], 0.09 / 0.38, 0.015);
  EXPECT_NEAR(g[2], 0.04 / 0.38, 0.015);
}

// Without top-k or top-p the draw walks blocks of 1,024 tokens' weights: heavy tokens in the first, middle and last
// (partial) block and a flat tail are drawn as the softmax says.
TEST(Sampler, FrequenciesHoldAcrossTheDrawBlocks) {
  std::vector<float> logits(2500, 0.0f);
  logits[3] = std::log(400.0f);
  logits[1100] = std::log(300.0f);
  logits[2499] = std::log(200.0f);
  const double total = 400 + 300 + 200 + 2497;
  auto f = frequencies({.temperature = 1.0f, .seed = 12}, logits, 40000);
  EXPECT_NEAR(f[3], 400 / total, 0.006);
  EXPECT_NEAR(f[1100], 300 / total, 0.006);
  EXPECT_NEAR(f[2499], 200 / total, 0.006);
  double tail = 0;
  for (const auto& [id, freq] : f) tail += id == 3 || id == 1100 || id == 2499 ? 0 : freq;
  EXPECT_NEAR(tail, 2497 / total, 0.01);
  // min_p 0.1 of the top weight (400) keeps only the three heavy tokens.
  auto m = frequencies({.temperature = 1.0f, .min_p = 0.1f, .seed = 13}, logits, 20000);
  EXPECT_EQ(m.size(), 3u);
  EXPECT_NEAR(m[2499], 200.0 / 900.0, 0.015);
}

TEST(Sampler, TopKTopPAndMinPCutTheTail) {
  auto k2 = frequencies({.temperature = 1.0f, .top_k = 2, .seed = 3}, kThree, 40000);
  EXPECT_EQ(k2.count(2), 0u);
  EXPECT_NEAR(k2[0], 0.5 / 0.8, 0.015);
  auto p7 = frequencies({.temperature = 1.0f, .top_p = 0.7f, .seed = 4}, kThree, 20000);  // 0.5 < 0.7 <= 0.8
  EXPECT_EQ(p7.count(2), 0u);
  EXPECT_NEAR(p7[1], 0.3 / 0.8, 0.015);
  auto p4 = frequencies({.temperature = 1.0f, .top_p = 0.4f, .seed = 5}, kThree, 1000);
  EXPECT_EQ(p4.size(), 1u);
  EXPECT_EQ(p4.count(0), 1u);
  auto m = frequencies({.temperature = 1.0f, .min_p = 0.5f, .seed = 6}, kThree, 20000);  // keeps p >= 0.25
  EXPECT_EQ(m.count(2), 0u);
  EXPECT_NEAR(m[0], 0.5 / 0.8, 0.015);
}

// Every draw must come from the candidate set a full sort gives; the nucleus here holds thousands of ids.
TEST(Sampler, WideNucleusMatchesAFullSort) {
  std::mt19937 rng(11);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  std::vector<float> logits(20000);
  for (float& l : logits) l = normal(rng);
  std::vector<int32_t> order(logits.size());
  std::iota(order.begin(), order.end(), 0);
  std::sort(order.begin(), order.end(), [&](int32_t a, int32_t b) { return logits[size_t(a)] > logits[size_t(b)]; });
  double total = 0;
  for (float l : logits) total += std::exp(l - logits[size_t(order[0])]);
  auto nucleus = [&](double top_p, float min_p) {
    std::set<int32_t> keep;
    double acc = 0;
    for (int32_t id : order) {
      const double w = std::exp(logits[size_t(id)] - logits[size_t(order[0])]);
      if (w < min_p) break;
      keep.insert(id);
      acc += w;
      if (acc >= top_p * total) break;
    }
    return keep;
  };
  for (auto [top_p, min_p] : {std::pair{0.9f, 0.0f}, std::pair{0.3f, 0.0f}, std::pair{1.0f, 0.05f}}) {
    const std::set<int32_t> expected = nucleus(top_p, min_p);
    ASSERT_GT(expected.size(), 256u);  // wider than the sampler's first sorted guess
    auto f = frequencies({.temperature = 1.0f, .top_p = top_p, .min_p = min_p, .seed = 9}, logits, 400);
    for (const auto& [id, freq] : f) EXPECT_TRUE(expected.count(id)) << "id " << id << " outside the nucleus";
    EXPECT_GT(f.size(), 100u);  // draws spread over the nucleus, not a few tokens
  }
}

}  // namespace
}  // namespace cai
