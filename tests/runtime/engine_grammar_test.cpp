// Constrained generation on a real model that knows no JSON (TinyStories): every sampled output parses as JSON and
// satisfies the schema (checked field by field here, not with the grammar), ends with "stop" as soon as the value is
// complete, and with R1-style reasoning the constraint starts after the forced </think>.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "engine_test_util.h"
#include "runtime/grammar/json_grammar.h"
#include "runtime/reasoning_budget.h"
#include "tokenizer/reasoning_parser.h"

namespace cai {
namespace {

using nlohmann::json;
using test::Collector;
using test::load;

constexpr const char* kSchema = R"({"type": "object", "properties": {
    "name": {"type": "string", "minLength": 1, "maxLength": 12},
    "age": {"type": "integer", "minimum": 1, "maximum": 99},
    "happy": {"type": "boolean"},
    "pets": {"type": "array", "items": {"enum": ["cat", "dog", "fish"]}, "maxItems": 3}},
  "required": ["name", "age", "happy", "pets"], "additionalProperties": false})";

size_t utf8_chars(const std::string& s) {
  size_t n = 0;
  for (char c : s) n += (static_cast<unsigned char>(c) & 0xC0) != 0x80;
  return n;
}

void expect_valid(const std::string& text) {
  const json v = json::parse(text, nullptr, /*allow_exceptions=*/false);
  ASSERT_FALSE(v.is_discarded()) << "not JSON: " << text;
  ASSERT_TRUE(v.is_object()) << text;
  EXPECT_EQ(v.size(), 4u) << text;
  ASSERT_TRUE(v.contains("name") && v["name"].is_string()) << text;
  const size_t len = utf8_chars(v["name"].get<std::string>());
  EXPECT_TRUE(len >= 1 && len <= 12) << text;
  ASSERT_TRUE(v.contains("age") && v["age"].is_number_integer()) << text;
  EXPECT_TRUE(v["age"].get<int>() >= 1 && v["age"].get<int>() <= 99) << text;
  EXPECT_TRUE(v.contains("happy") && v["happy"].is_boolean()) << text;
  ASSERT_TRUE(v.contains("pets") && v["pets"].is_array()) << text;
  EXPECT_LE(v["pets"].size(), 3u) << text;
  for (const json& p : v["pets"]) EXPECT_TRUE(p == "cat" || p == "dog" || p == "fish") << text;
}

// stories260K (TinyStories-trained) falls back to byte tokens, so it can write any text.
TEST(EngineGrammar, SampledOutputFollowsTheSchemaAndStopsWhenComplete) {
  auto engine = Engine::create(load("models/stories260K.gguf"), EngineOptions{});
  ASSERT_TRUE(engine.ok());
  Engine& e = **engine;
  auto g = std::make_shared<const grammar::Grammar>(grammar::Grammar::json_schema(json::parse(kSchema)).value());
  std::set<std::string> distinct;
  for (uint64_t seed : {1u, 2u}) {
    GenerationRequest r;
    r.prompt = e.model().tokenizer->encode("Once upon a time", true);
    r.sampling.temperature = 1.0f;
    r.sampling.seed = seed;
    r.sampling.top_p = seed == 1 ? 1.0f : 0.95f;  // 1: the draw is checked, masked only when refused; else masked
    r.max_tokens = 200;
    r.n = 8;
    r.grammar = g;
    Collector c(r.n);
    ASSERT_TRUE(e.submit(r, c.callback()).ok());
    c.wait();
    for (const Collector::Choice& ch : c.choices) {
      EXPECT_EQ(ch.last.finish, FinishReason::kStop) << ch.text;
      expect_valid(ch.text);
      distinct.insert(ch.text);
    }
  }
  EXPECT_GT(distinct.size(), 8u);  // the model still chooses: samples differ
  // Greedy decoding sees the mask too.
  GenerationRequest greedy = test::greedy(e.model().tokenizer->encode("Once upon a time", true), 200);
  greedy.grammar = g;
  Collector c;
  ASSERT_TRUE(e.submit(greedy, c.callback()).ok());
  c.wait();
  expect_valid(c.text);
}

// stories260K spells "</think>" from bytes; with a reasoning budget of 4 the close is forced, then the answer is JSON.
TEST(EngineGrammar, ReasoningStaysFreeAndTheAnswerIsConstrained) {
  auto engine = Engine::create(load("models/stories260K.gguf"), EngineOptions{});
  ASSERT_TRUE(engine.ok());
  Engine& e = **engine;
  GenerationRequest r = test::greedy(e.model().tokenizer->encode("Once upon a time", true), 200);
  r.ignore_eos = false;
  r.prompt_opens_think = true;
  r.max_reasoning_tokens = 4;
  r.grammar = std::make_shared<const grammar::Grammar>(grammar::Grammar::json_schema(json::parse(kSchema)).value());
  Collector c;
  ASSERT_TRUE(e.submit(r, c.callback()).ok());
  c.wait();
  EXPECT_EQ(c.last.finish, FinishReason::kStop) << c.text;
  ReasoningParser parser(/*prompt_opened_think=*/true);
  ReasoningDelta d = parser.push(c.text), rest = parser.finish();
  EXPECT_FALSE(d.reasoning.empty()) << c.text;  // four free tokens, not JSON
  expect_valid(d.content + rest.content);
}

// A model that wants to stop inside its reasoning (here: end-of-sequence biased by +100) cannot end a request that
// requires a structure: EOS is banned until </think>, which a default budget of half of max_tokens forces, and the
// answer is the JSON the schema asks for.
TEST(EngineGrammar, TheReasoningCannotEndARequiredStructure) {
  auto engine = Engine::create(load("models/stories260K.gguf"), EngineOptions{});
  ASSERT_TRUE(engine.ok());
  Engine& e = **engine;
  const Tokenizer& tok = *e.model().tokenizer;
  ASSERT_FALSE(tok.eog_ids().empty());
  for (bool constrained : {false, true}) {
    GenerationRequest r;
    r.prompt = tok.encode("Once upon a time", true);
    r.sampling.temperature = 1.0f;
    r.sampling.seed = 7;
    for (int32_t id : tok.eog_ids()) r.sampling.logit_bias.emplace_back(id, 100.0f);
    r.max_tokens = 400;  // 200 for the reasoning, the rest holds the byte-spelled JSON
    r.prompt_opens_think = true;
    if (constrained)
      r.grammar = std::make_shared<const grammar::Grammar>(grammar::Grammar::json_schema(json::parse(kSchema)).value());
    Collector c;
    ASSERT_TRUE(e.submit(r, c.callback()).ok());
    c.wait();
    EXPECT_EQ(c.last.finish, FinishReason::kStop) << c.text;
    if (!constrained) {
      EXPECT_EQ(c.last.n_generated_tokens, 1) << c.text;  // free text: the biased end comes first
      continue;
    }
    ReasoningParser parser(/*prompt_opened_think=*/true);
    ReasoningDelta d = parser.push(c.text), rest = parser.finish();
    EXPECT_FALSE(d.reasoning.empty()) << c.text;
    expect_valid(d.content + rest.content);
  }
}

// Speculative decoding verifies every drafted position through the grammar's mask as it advances (and through the
// forced reasoning close): greedy structured output, with and without reasoning, is the text decoding without
// speculation gives. The model drafting for itself knows no grammar: its drafts stand in the free reasoning and fall
// where the mask overrules them.
TEST(EngineGrammar, SpeculativeDecodingKeepsTheConstrainedText) {
  auto plain = Engine::create(load("models/stories260K.gguf"), EngineOptions{});
  ASSERT_TRUE(plain.ok());
  EngineOptions o;
  o.spec.method = SpecMethod::kDraft;
  o.spec.tokens = 4;
  auto spec = Engine::create(load("models/stories260K.gguf"), o, load("models/stories260K.gguf"));
  ASSERT_TRUE(spec.ok()) << spec.status().to_string();
  const auto schema =
      std::make_shared<const grammar::Grammar>(grammar::Grammar::json_schema(json::parse(kSchema)).value());
  for (bool reasoning : {false, true}) {
    GenerationRequest r = test::greedy((*plain)->model().tokenizer->encode("Once upon a time", true), 200);
    r.ignore_eos = false;
    r.grammar = schema;
    r.prompt_opens_think = reasoning;
    r.max_reasoning_tokens = reasoning ? 4 : -1;
    Collector a, b;  // one engine at a time: both run on the CPU device's one thread pool
    ASSERT_TRUE((*plain)->submit(r, a.callback()).ok());
    a.wait();
    ASSERT_TRUE((*spec)->submit(r, b.callback()).ok());
    b.wait();
    EXPECT_EQ(b.text, a.text) << "reasoning " << reasoning;
    EXPECT_EQ(b.tokens, a.tokens);
    EXPECT_EQ(b.last.finish, FinishReason::kStop);
    EXPECT_GT(b.last.n_draft_tokens, 0) << "reasoning " << reasoning;
    if (reasoning) EXPECT_GT(b.last.n_accepted_tokens, 0);
  }
}

// TinyStories-656K has no byte tokens and no token holding '{': an object cannot be written, which is an error.
TEST(EngineGrammar, AVocabularyThatCannotWriteTheFormatIsAnError) {
  auto engine = Engine::create(load("models/TinyStories-656K-Q8_0.gguf"), EngineOptions{});
  ASSERT_TRUE(engine.ok());
  Engine& e = **engine;
  GenerationRequest r = test::greedy(e.model().tokenizer->encode("Once upon a time", true), 20);
  r.grammar = std::make_shared<const grammar::Grammar>(grammar::Grammar::json_object());
  Collector c;
  ASSERT_TRUE(e.submit(r, c.callback()).ok());
  c.wait();
  EXPECT_EQ(c.last.finish, FinishReason::kError);
  EXPECT_TRUE(c.text.empty());
  // A string is within its reach (it has '"' and letters).
  r.grammar = std::make_shared<const grammar::Grammar>(grammar::json_string(1, 20));
  Collector s;
  ASSERT_TRUE(e.submit(r, s.callback()).ok());
  s.wait();
  EXPECT_EQ(s.last.finish, FinishReason::kStop);
  EXPECT_TRUE(json::parse(s.text, nullptr, false).is_string()) << s.text;
}

}  // namespace
}  // namespace cai
