// TokenMasker on a real vocabulary (TinyStories' SentencePiece tokens): in hand-picked states the allowed tokens are
// exactly those whose bytes keep the text a prefix of the language (worked out here from the values themselves), end
// tokens only where the text is complete; the per-sequence state follows </think> and forced tokens.
#include "runtime/grammar/token_mask.h"

#include <gtest/gtest.h>

#include <cmath>
#include <set>

#include "runtime/grammar/sequence_grammar.h"
#include "test_paths.h"
#include "tiny_tokenizer.h"
#include "tokenizer/tokenizer.h"

namespace cai::grammar {
namespace {

using test::tiny_tokenizer;

std::shared_ptr<TokenMasker> masker_for(const char* schema, std::shared_ptr<const TokenVocabulary> vocab) {
  Result<Grammar> g = Grammar::json_schema(nlohmann::ordered_json::parse(schema));
  EXPECT_TRUE(g.ok()) << g.status().to_string();
  return make_token_masker(g.value(), /*after_reasoning=*/false, std::move(vocab));
}

std::set<int32_t> allowed_set(TokenMasker& m, int32_t state) {
  const auto mask = m.allowed(state);
  std::set<int32_t> out;
  for (int32_t t = 0; t < m.vocabulary().size(); ++t)
    if (((*mask)[static_cast<size_t>(t) / 64] >> (t % 64)) & 1) out.insert(t);
  return out;
}

// The tokens whose bytes, after `done`, leave a prefix of one of `sentences`; plus the end tokens when `done` is one.
std::set<int32_t> expected(const TokenVocabulary& v, const std::string& done,
                           const std::vector<std::string>& sentences) {
  std::set<int32_t> out;
  for (int32_t t = 0; t < v.size(); ++t) {
    if (v.is_end(t)) {
      if (std::find(sentences.begin(), sentences.end(), done) != sentences.end()) out.insert(t);
      continue;
    }
    const std::string& b = v.bytes(t);
    if (b.empty()) continue;
    for (const std::string& s : sentences)
      if (s.size() >= done.size() + b.size() && s.compare(0, done.size(), done) == 0 &&
          s.compare(done.size(), b.size(), b) == 0) {
        out.insert(t);
        break;
      }
  }
  return out;
}

TEST(TokenMask, BooleanAllowsExactlyThePrefixesOfTrueAndFalse) {
  const auto tok = tiny_tokenizer();
  auto vocab = std::make_shared<const TokenVocabulary>(*tok);
  auto m = masker_for(R"({"type": "boolean"})", vocab);
  const std::vector<std::string> words = {"true", "false"};
  const std::set<int32_t> start = allowed_set(*m, m->start());
  EXPECT_EQ(start, expected(*vocab, "", words));
  EXPECT_FALSE(start.empty());
  const int32_t tr = m->advance_bytes(m->start(), "tr");
  ASSERT_GE(tr, 0);
  EXPECT_EQ(allowed_set(*m, tr), expected(*vocab, "tr", words));
  const int32_t done = m->advance_bytes(m->start(), "true");
  EXPECT_EQ(allowed_set(*m, done), expected(*vocab, "true", words));  // only the end tokens
  EXPECT_TRUE(m->finished(done));
  EXPECT_EQ(m->advance_bytes(m->start(), "tx"), ByteDfa::kDead);
}

TEST(TokenMask, IntegerRangeAllowsDigitsThatStayInRange) {
  const auto tok = tiny_tokenizer();
  auto vocab = std::make_shared<const TokenVocabulary>(*tok);
  auto m = masker_for(R"({"type": "integer", "minimum": 0, "maximum": 120})", vocab);
  std::vector<std::string> values;
  for (int v = 0; v <= 120; ++v) values.push_back(std::to_string(v));
  for (const std::string done : {"", "1", "12", "120", "9"}) {
    const int32_t s = m->advance_bytes(m->start(), done);
    ASSERT_GE(s, 0) << done;
    EXPECT_EQ(allowed_set(*m, s), expected(*vocab, done, values)) << "after '" << done << "'";
  }
  // Cached masks are the same object; applying one sets exactly the others to -inf.
  EXPECT_EQ(m->allowed(m->start()), m->allowed(m->start()));
  std::vector<float> logits(static_cast<size_t>(vocab->size()) + 3, 1.0f);  // a padded logits row
  const int32_t s12 = m->advance_bytes(m->start(), "12");
  m->apply(s12, logits);
  const std::set<int32_t> ok = allowed_set(*m, s12);
  for (size_t t = 0; t < logits.size(); ++t)
    EXPECT_EQ(std::isinf(logits[t]), !ok.contains(static_cast<int32_t>(t))) << t;
}

TEST(TokenMask, StringStateAllowsTextAndTheClosingQuote) {
  // A toy vocabulary to check multi-byte tokens crossing the end of the string.
  auto vocab = std::make_shared<const TokenVocabulary>(
      std::vector<std::string>{"", "\"", "a", "ab", "\"}", "\",", "\xC3", "\xA9", "\xC3\xA9", "\"a", "abc", "\\n"},
      std::vector<int32_t>{0});
  auto m = masker_for(
      R"({"type": "object", "properties": {"s": {"type": "string", "maxLength": 2}}, "required": ["s"]})", vocab);
  const int32_t in = m->advance_bytes(m->start(), "{\"s\":\"");
  ASSERT_GE(in, 0);
  // '"' alone, '"}' closes the object, not '",' (no more properties); "abc" is too long; a lone \xA9 is not UTF-8.
  EXPECT_EQ(allowed_set(*m, in), (std::set<int32_t>{1, 2, 3, 4, 6, 8, 11}));
  const int32_t two = m->advance_bytes(in, "\xC3\xA9\\n");
  ASSERT_GE(two, 0);
  EXPECT_EQ(allowed_set(*m, two), (std::set<int32_t>{1, 4}));
  const int32_t end = m->advance(two, 4);
  EXPECT_TRUE(m->finished(end));
  EXPECT_EQ(allowed_set(*m, end), (std::set<int32_t>{0}));
}

TEST(SequenceGrammar, StartsAfterThinkAndAllowsTheWhitespaceAfterIt) {
  auto vocab = std::make_shared<const TokenVocabulary>(
      std::vector<std::string>{"", "<think>", "</think>", "\n\n", "hmm", "true", "x"}, std::vector<int32_t>{0});
  auto masker = make_token_masker(Grammar::json_schema(nlohmann::json{{"type", "boolean"}}).value(),
                                  /*after_reasoning=*/true, vocab);
  SequenceGrammar g(masker, /*starts_in_reasoning=*/true);
  EXPECT_FALSE(g.active());
  g.push(4, "hmm");
  EXPECT_FALSE(g.active());
  g.push(2, "</think>");
  ASSERT_TRUE(g.active());
  std::vector<float> logits(7, 0.0f);
  g.apply(logits);
  EXPECT_TRUE(std::isfinite(logits[3]));  // the whitespace after </think>
  EXPECT_TRUE(std::isfinite(logits[5]));
  EXPECT_TRUE(std::isinf(logits[6]) && std::isinf(logits[4]) && std::isinf(logits[0]));
  g.push(3, "\n\n");  // e.g. forced by the reasoning budget right after </think>
  EXPECT_FALSE(g.finished());
  g.push(5, "true");
  EXPECT_TRUE(g.finished());
}

}  // namespace
}  // namespace cai::grammar
