// Speculative decoding in the serving engine: greedy output is token for token what decoding without it gives (every
// method, 16 concurrent streams with mixed per-request methods, penalties, logit bias and stop strings), sampled
// output keeps the model's distribution (chi-square against the exact distribution), and the counts reach the events
// and stats.
#include <gtest/gtest.h>

#include <cmath>

#include "engine_test_util.h"
#include "runtime/sequence_batch.h"

namespace cai {
namespace {

using test::Collector;
using test::greedy;
using test::load;
using test::prompt_for;
using test::run_alone;

// A prompt with repeated phrases (prompt lookup finds them) followed by a distinct tail.
std::vector<int32_t> repetitive_prompt(int i) {
  std::vector<int32_t> p = {1};
  const std::vector<int32_t> phrase = prompt_for(i, 6);
  for (int r = 0; r < 3; ++r) p.insert(p.end(), phrase.begin() + 1, phrase.end());
  p.push_back(static_cast<int32_t>(50 + i));
  return p;
}

std::vector<GenerationRequest> mixed_requests(int n, int n_tok) {
  std::vector<GenerationRequest> reqs;
  for (int i = 0; i < n; ++i) {
    GenerationRequest r = greedy(i % 2 ? repetitive_prompt(i) : prompt_for(i, 5 + i * 3), n_tok);
    if (i % 3 == 1) {  // the processing every verified position goes through
      r.sampling.repetition_penalty = 1.3f;
      r.sampling.presence_penalty = 0.4f;
      r.sampling.frequency_penalty = 0.2f;
      r.sampling.logit_bias = {{static_cast<int32_t>(100 + i), 5.0f}, {static_cast<int32_t>(13 + i), -100.0f}};
    }
    if (i % 5 == 2) r.stop = {"ing", " the"};
    reqs.push_back(std::move(r));
  }
  return reqs;
}

// Submits every request at once; returns each one's tokens and final event.
std::vector<Collector> run_together(Engine& e, const std::vector<GenerationRequest>& reqs) {
  std::vector<Collector> out(reqs.size());
  for (size_t i = 0; i < reqs.size(); ++i) EXPECT_TRUE(e.submit(reqs[i], out[i].callback()).ok());
  for (Collector& c : out) c.wait();
  return out;
}

TEST(EngineSpec, GreedyOutputEqualsDecodingWithoutItUnderConcurrentMixedMethods) {
  EngineOptions plain;
  plain.max_batch = 16;
  auto base = Engine::create(load("models/TinyStories-656K-Q8_0.gguf"), plain);
  ASSERT_TRUE(base.ok());
  const std::vector<GenerationRequest> reqs = mixed_requests(16, 40);
  std::vector<std::vector<int32_t>> solo;
  std::vector<std::string> solo_text;
  for (const GenerationRequest& r : reqs) {
    Collector c;
    ASSERT_TRUE((*base)->submit(r, c.callback()).ok());
    c.wait();
    solo.push_back(c.tokens);
    solo_text.push_back(c.text);
  }
  for (int k : {1, 3, 6}) {
    EngineOptions o = plain;
    o.spec.method = SpecMethod::kNgram;
    o.spec.tokens = k;
    auto engine = Engine::create(load("models/TinyStories-656K-Q8_0.gguf"), o);
    ASSERT_TRUE(engine.ok());
    std::vector<GenerationRequest> mixed = reqs;
    for (size_t i = 0; i < mixed.size(); ++i) {  // per request: off, fewer tokens, the server's
      if (i % 4 == 0) mixed[i].spec_method = SpecMethod::kOff;
      if (i % 4 == 1) mixed[i].spec_tokens = 1;
    }
    std::vector<Collector> got = run_together(**engine, mixed);
    int64_t accepted = 0;
    for (size_t i = 0; i < reqs.size(); ++i) {
      EXPECT_EQ(got[i].tokens, solo[i]) << "K " << k << " request " << i;
      EXPECT_EQ(got[i].text, solo_text[i]) << "K " << k << " request " << i;
      EXPECT_LE(got[i].last.n_accepted_tokens, got[i].last.n_draft_tokens);
      if (i % 4 == 0) EXPECT_EQ(got[i].last.n_draft_tokens, 0) << "request " << i << " asked for no speculation";
      accepted += got[i].last.n_accepted_tokens;
    }
    const EngineStats st = (*engine)->stats();
    EXPECT_EQ(st.spec_method, "ngram");
    EXPECT_EQ(st.spec_accepted_tokens, static_cast<uint64_t>(accepted));
    EXPECT_GT(accepted, 0) << "K " << k << ": no draft was ever accepted, so verification went untested";
    EXPECT_LT(st.steps, (*base)->stats().steps) << "K " << k;
  }
}

// --spec-max-batch: with more sequences running than it allows, nobody drafts; the output is the same.
TEST(EngineSpec, NoDraftsAboveTheBatchLimit) {
  EngineOptions o;
  o.max_batch = 16;
  o.spec.method = SpecMethod::kNgram;
  o.spec.max_batch = 4;
  auto engine = Engine::create(load("models/TinyStories-656K-Q8_0.gguf"), o);
  ASSERT_TRUE(engine.ok());
  // Eight choices of one request: the first computes the prompt alone (and drafts once, one sequence running), then
  // all eight run together to the end.
  GenerationRequest r = greedy(repetitive_prompt(1), 24);
  r.n = 8;
  Collector eight(8);
  ASSERT_TRUE((*engine)->submit(r, eight.callback()).ok());
  eight.wait();
  EXPECT_LE((*engine)->stats().spec_draft_tokens, static_cast<uint64_t>(o.spec.tokens));
  r.n = 1;
  Collector alone;
  ASSERT_TRUE((*engine)->submit(r, alone.callback()).ok());
  alone.wait();
  for (const Collector::Choice& c : eight.choices) EXPECT_EQ(c.tokens, alone.tokens);
  EXPECT_GT(alone.last.n_draft_tokens, 0);
  o.spec.max_batch = -1;
  EXPECT_EQ(Engine::create(load("models/TinyStories-656K-Q8_0.gguf"), o).status().code(), StatusCode::kInvalidArgument);
}

// On a server that runs another method (here none), a request may still ask for prompt lookup; methods the server
// has not loaded are refused.
TEST(EngineSpec, PerRequestMethods) {
  auto engine = Engine::create(load("models/TinyStories-656K-Q8_0.gguf"), EngineOptions{});
  ASSERT_TRUE(engine.ok());
  GenerationRequest r = greedy(repetitive_prompt(3), 24);
  const std::vector<int32_t> plain = run_alone(**engine, r);
  r.spec_method = SpecMethod::kNgram;
  Collector c;
  ASSERT_TRUE((*engine)->submit(r, c.callback()).ok());
  c.wait();
  EXPECT_EQ(c.tokens, plain);
  EXPECT_GT(c.last.n_draft_tokens, 0);
  r.spec_method = SpecMethod::kMtp;
  Result<uint64_t> refused = (*engine)->submit(r, [](const StreamEvent&) {});
  ASSERT_FALSE(refused.ok());
  EXPECT_NE(refused.status().message().find("not loaded on this server"), std::string::npos);
  r.spec_method.reset();
  r.spec_tokens = -2;
  EXPECT_EQ((*engine)->submit(r, [](const StreamEvent&) {}).status().code(), StatusCode::kInvalidArgument);
}

// DeepSeek's MTP module drafting for 8 concurrent streams of the tiny V3 model, and prompt lookup for some of them on
// the same server: the greedy tokens are those of the model loaded without the module.
TEST(EngineSpec, MtpServerKeepsGreedyOutput) {
  hal::Device* cpu = test::device_named("cpu");
  auto base = Engine::create(load_model(test::data_path("oracle/deepseek_v3_tiny_mtp"), *cpu).value(), EngineOptions{});
  ASSERT_TRUE(base.ok());
  LoadOptions lo;
  lo.mtp = true;
  EngineOptions o;
  o.spec.method = SpecMethod::kMtp;
  o.spec.tokens = 2;
  auto engine = Engine::create(load_model(test::data_path("oracle/deepseek_v3_tiny_mtp"), *cpu, lo).value(), o);
  ASSERT_TRUE(engine.ok()) << engine.status().to_string();
  std::vector<GenerationRequest> reqs;
  for (int i = 0; i < 8; ++i) {
    GenerationRequest r = greedy(i % 2 ? repetitive_prompt(i) : prompt_for(i, 4 + i), 24);
    for (int32_t& t : r.prompt) t %= 512;
    if (i % 4 == 3) r.spec_method = SpecMethod::kNgram;
    reqs.push_back(std::move(r));
  }
  std::vector<Collector> got = run_together(**engine, reqs);
  for (size_t i = 0; i < reqs.size(); ++i) {
    EXPECT_EQ(got[i].tokens, run_alone(**base, reqs[i])) << "request " << i;
    EXPECT_GT(got[i].last.n_draft_tokens, 0) << "request " << i;
  }
  EXPECT_EQ((*engine)->stats().spec_method, "mtp");
}

// A draft model (the F16 file drafting for its Q8_0 quantization) over 16 concurrent streams, some of them asking for
// prompt lookup or for none: every stream gets its tokens without speculation, and most drafts are accepted.
TEST(EngineSpec, DraftModelServerKeepsGreedyOutput) {
  EngineOptions plain;
  plain.max_batch = 16;
  auto base = Engine::create(load("models/TinyStories-656K-Q8_0.gguf"), plain);
  ASSERT_TRUE(base.ok());
  EngineOptions o = plain;
  o.spec.method = SpecMethod::kDraft;
  o.spec.tokens = 4;
  auto engine = Engine::create(load("models/TinyStories-656K-Q8_0.gguf"), o, load("models/TinyStories-656K.f16.gguf"));
  ASSERT_TRUE(engine.ok()) << engine.status().to_string();
  std::vector<GenerationRequest> reqs = mixed_requests(16, 32);
  for (size_t i = 0; i < reqs.size(); ++i) {
    if (i % 5 == 3) reqs[i].spec_method = SpecMethod::kNgram;
    if (i % 5 == 4) reqs[i].spec_method = SpecMethod::kOff;
  }
  std::vector<Collector> got = run_together(**engine, reqs);
  for (size_t i = 0; i < reqs.size(); ++i) EXPECT_EQ(got[i].tokens, run_alone(**base, reqs[i])) << "request " << i;
  const EngineStats st = (*engine)->stats();
  EXPECT_EQ(st.spec_method, "draft");
  EXPECT_GT(st.spec_accepted_tokens, st.spec_draft_tokens / 2);
  Result<std::unique_ptr<Engine>> no_draft = Engine::create(load("models/TinyStories-656K-Q8_0.gguf"), o);
  ASSERT_FALSE(no_draft.ok());
  EXPECT_NE(no_draft.status().message().find("no draft model"), std::string::npos);
}

// The chi-square quantile of probability 1 - alpha (Wilson–Hilferty), z the standard normal quantile of 1 - alpha.
double chi_square_critical(int df, double z) {
  const double a = 2.0 / (9.0 * df);
  return df * std::pow(1.0 - a + z * std::sqrt(a), 3.0);
}

// softmax(logits) in double.
std::vector<double> softmax(std::span<const float> logits) {
  double mx = logits[0];
  for (float l : logits) mx = std::max(mx, static_cast<double>(l));
  std::vector<double> p(logits.size());
  double sum = 0;
  for (size_t i = 0; i < p.size(); ++i) sum += p[i] = std::exp(logits[i] - mx);
  for (double& x : p) x /= sum;
  return p;
}

// Sampling at temperature 1 with prompt lookup: the second generated token is drawn during the verification of a
// draft (accepted with the probability the model gives it, else redrawn). Its distribution over 3,000 seeds must be
// the model's exact marginal Σ_x p(x | prompt) · p(y | prompt, x). Measured: chi² 23.3 on 32 degrees of freedom
// (critical 62.6), 26 % of drafts accepted; rules that favour the draft fail it by far (always accept: 8,357; keep
// the draft in place of a quarter of the draws: 1,518).
TEST(EngineSpec, SampledTokensKeepTheModelsDistribution) {
  LoadedModel ref = load("models/stories260K.gguf");
  const std::vector<int32_t> prompt = ref.tokenizer->encode(
      "Lily saw a big red ball in the park. She wanted to play with it. Lily saw a big red ball in the park. She "
      "wanted to play with it. Lily saw a big red ball in the park. She wanted",
      true);
  const int vocab = ref.model->config().vocab_size;
  // Exact marginal of the second token: one sequence per first token, in one batch.
  Result<SequenceBatch> one = SequenceBatch::create(*ref.model, 1, static_cast<int>(prompt.size()) + 2);
  ASSERT_TRUE(one.ok());
  const std::vector<double> p1 = softmax(one->step(prompt, static_cast<int>(prompt.size()), false).value());
  Result<SequenceBatch> all = SequenceBatch::create(*ref.model, vocab, static_cast<int>(prompt.size()) + 2);
  ASSERT_TRUE(all.ok());
  std::vector<int32_t> rows;
  for (int x = 0; x < vocab; ++x) {
    rows.insert(rows.end(), prompt.begin(), prompt.end());
    rows.push_back(x);
  }
  const std::vector<float> second = all->step(rows, static_cast<int>(prompt.size()) + 1, false).value();
  std::vector<double> expected(static_cast<size_t>(vocab), 0.0);
  for (int x = 0; x < vocab; ++x) {
    const size_t n = static_cast<size_t>(vocab), xi = static_cast<size_t>(x);
    const std::vector<double> p2 = softmax({second.data() + xi * n, n});
    for (size_t y = 0; y < n; ++y) expected[y] += p1[xi] * p2[y];
  }

  EngineOptions o;
  o.max_batch = 16;
  o.max_queue = 4096;
  o.spec.method = SpecMethod::kNgram;
  o.spec.tokens = 3;
  auto engine = Engine::create(load("models/stories260K.gguf"), o);
  ASSERT_TRUE(engine.ok());
  constexpr int kDraws = 3000;
  std::vector<GenerationRequest> reqs;
  for (int i = 0; i < kDraws; ++i) {
    GenerationRequest r;
    r.prompt = prompt;
    r.sampling.temperature = 1.0f;
    r.sampling.seed = static_cast<uint64_t>(i) + 1;
    r.max_tokens = 3;
    r.ignore_eos = true;
    reqs.push_back(std::move(r));
  }
  std::vector<Collector> got = run_together(**engine, reqs);
  std::vector<int> counts(static_cast<size_t>(vocab), 0);
  for (const Collector& c : got) {
    ASSERT_EQ(c.tokens.size(), 3u);
    ++counts[static_cast<size_t>(c.tokens[1])];
  }
  const EngineStats st = (*engine)->stats();
  EXPECT_GT(st.spec_accepted_tokens, st.spec_draft_tokens / 10) << "too few drafts accepted for the test to bite";
  // Pearson's statistic over the tokens expected at least 5 times, the rest pooled into one bin.
  double chi2 = 0, rest_expected = 0;
  int rest_count = 0, bins = 0;
  for (int y = 0; y < vocab; ++y) {
    const double e = expected[static_cast<size_t>(y)] * kDraws;
    if (e < 5) {
      rest_expected += e, rest_count += counts[static_cast<size_t>(y)];
      continue;
    }
    chi2 += (counts[static_cast<size_t>(y)] - e) * (counts[static_cast<size_t>(y)] - e) / e;
    ++bins;
  }
  if (rest_expected >= 5) chi2 += (rest_count - rest_expected) * (rest_count - rest_expected) / rest_expected, ++bins;
  ASSERT_GE(bins, 3);
  EXPECT_LT(chi2, chi_square_critical(bins - 1, 3.09)) << bins << " bins";  // alpha = 0.001
}

}  // namespace
}  // namespace cai
