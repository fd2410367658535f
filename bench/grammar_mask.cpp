// cai-grammar-bench: what structured output costs per generated token on a real 151k-token vocabulary (Qwen2's
// tokenizer): for several schemas, a valid answer is tokenized and replayed token by token through a fresh
// TokenMasker (a new request: cold cache) and again through the same one (its other choices: warm cache), timing the
// mask applied to a full logits row plus the advance. With --step-ms (a decode step at batch 16, from `cai bench -b
// 16`, see grammar_mask_bench.sh) it prints the mask time of 16 sequences as a share of that step.
#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <vector>

#include "runtime/grammar/sequence_grammar.h"
#include "tokenizer/tokenizer.h"

namespace {

using namespace cai;
using Clock = std::chrono::steady_clock;

struct Case {
  const char* name;
  const char* schema;  // "" = json_object
  std::vector<const char*> answers;
};

const std::vector<Case> kCases = {
    {"person (object, bounded string, integer range)",
     R"({"type": "object", "properties": {"name": {"type": "string", "maxLength": 40},
         "age": {"type": "integer", "minimum": 0, "maximum": 150}, "email": {"type": "string"}},
         "required": ["name", "age", "email"], "additionalProperties": false})",
     {R"({"name": "Ada Lovelace", "age": 36, "email": "ada@analytical.engine"})",
      R"({"name":"Grace Hopper","age":85,"email":"grace@navy.mil"})"}},
    {"enum + array of objects ($ref)",
     R"({"$defs": {"item": {"type": "object", "properties": {"sku": {"type": "string", "maxLength": 12},
         "qty": {"type": "integer", "minimum": 1, "maximum": 99}, "size": {"enum": ["S", "M", "L", "XL"]}},
         "required": ["sku", "qty", "size"], "additionalProperties": false}},
         "type": "object", "properties": {"items": {"type": "array", "items": {"$ref": "#/$defs/item"}, "maxItems": 8},
         "express": {"type": "boolean"}}, "required": ["items", "express"], "additionalProperties": false})",
     {R"({"items": [{"sku": "A-1001", "qty": 2, "size": "M"}, {"sku": "B-77", "qty": 10, "size": "XL"}], "express": true})"}},
    {"free text (unbounded string)",
     R"({"type": "object", "properties": {"answer": {"type": "string"}},
         "required": ["answer"], "additionalProperties": false})",
     {R"({"answer": "The quick brown fox jumps over the lazy dog. In 1969, humans first walked on the Moon; \"one small step\" was said."})"}},
    {"json_object (any object)",
     "",
     {R"({"city": "Paris", "temps": [12.5, 14, -3], "meta": {"source": "sensor-7", "ok": true, "note": null}})"}},
};

struct Timing {
  double total_us = 0, worst_us = 0;
  size_t tokens = 0;
};

// Replays `tokens` through `masker` from its start: apply + advance per token; with `check_only`, what the engine
// does when the unmasked draw is allowed (SequenceGrammar::can_check_first): allows + advance.
Timing replay(grammar::TokenMasker& masker, const std::vector<int32_t>& tokens, std::vector<float>& logits,
              bool check_only = false) {
  Timing t;
  int32_t state = masker.start();
  for (int32_t tok : tokens) {
    std::fill(logits.begin(), logits.end(), 0.0f);
    const auto begin = Clock::now();
    if (check_only) {
      if (!masker.allows(state, tok)) std::exit(1);
    } else {
      masker.apply(state, logits);
    }
    state = masker.advance(state, tok);
    const double us = std::chrono::duration<double, std::micro>(Clock::now() - begin).count();
    if (state < 0) {
      fmt::print(stderr, "token {} was refused by the grammar\n", tok);
      std::exit(1);
    }
    t.total_us += us;
    t.worst_us = std::max(t.worst_us, us);
    ++t.tokens;
  }
  return t;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app("cai-grammar-bench: structured-output token mask cost on a real vocabulary");
  std::string dir = "tests/data/tokenizer/qwen2";
  double step_ms = 0;
  int batch = 16;
  app.add_option("--tokenizer-dir", dir, "folder with tokenizer.json (and tokenizer_config.json)");
  app.add_option("--step-ms", step_ms, "decode step time at --batch sequences, to print the mask's share of it");
  app.add_option("--batch", batch, "sequences per decode step");
  CLI11_PARSE(app, argc, argv);

  auto tok = Tokenizer::from_hf_json(dir + "/tokenizer.json", dir + "/tokenizer_config.json");
  if (!tok.ok()) {
    fmt::print(stderr, "{}\n", tok.status().to_string());
    return 1;
  }
  auto begin = Clock::now();
  auto vocab = std::make_shared<const grammar::TokenVocabulary>(**tok);
  fmt::print("vocabulary: {} tokens, indexed in {:.1f} ms (once per engine)\n", vocab->size(),
             std::chrono::duration<double, std::milli>(Clock::now() - begin).count());
  std::vector<float> logits(static_cast<size_t>(vocab->size()));
  double worst_mean_cold = 0, worst_mean_warm = 0, worst_mean_check = 0;
  for (const Case& c : kCases) {
    Result<grammar::Grammar> g = *c.schema ? grammar::Grammar::json_schema(nlohmann::ordered_json::parse(c.schema))
                                           : Result<grammar::Grammar>(grammar::Grammar::json_object());
    if (!g.ok()) {
      fmt::print(stderr, "{}: {}\n", c.name, g.status().to_string());
      return 1;
    }
    Timing cold, warm, check;
    double build_ms = 0;  // the masker of a new grammar: program + the vocabulary as byte-class strings
    for (const char* answer : c.answers) {
      const std::vector<int32_t> tokens = (*tok)->encode(answer, /*add_bos=*/false);
      auto fresh = grammar::make_token_masker(g.value(), /*after_reasoning=*/false, vocab);
      const Timing c = replay(*fresh, tokens, logits, /*check_only=*/true);
      check.total_us += c.total_us, check.tokens += c.tokens;
      const auto build_begin = Clock::now();
      auto masker = grammar::make_token_masker(g.value(), /*after_reasoning=*/false, vocab);
      build_ms = std::max(build_ms, std::chrono::duration<double, std::milli>(Clock::now() - build_begin).count());
      const Timing a = replay(*masker, tokens, logits);
      const Timing b = replay(*masker, tokens, logits);
      cold.total_us += a.total_us, cold.tokens += a.tokens, cold.worst_us = std::max(cold.worst_us, a.worst_us);
      warm.total_us += b.total_us, warm.tokens += b.tokens, warm.worst_us = std::max(warm.worst_us, b.worst_us);
    }
    const double mean_cold = cold.total_us / static_cast<double>(cold.tokens);
    const double mean_warm = warm.total_us / static_cast<double>(warm.tokens);
    worst_mean_cold = std::max(worst_mean_cold, mean_cold);
    worst_mean_warm = std::max(worst_mean_warm, mean_warm);
    worst_mean_check = std::max(worst_mean_check, check.total_us / static_cast<double>(check.tokens));
    fmt::print(
        "{:<48} {:>3} tokens  mask: cold {:7.1f} us/token (worst {:8.1f}), warm {:6.1f}; check only {:5.1f}; "
        "masker built in {:.1f} ms\n",
        c.name, cold.tokens, mean_cold, cold.worst_us, mean_warm, check.total_us / static_cast<double>(check.tokens),
        build_ms);
  }
  if (step_ms > 0) {
    const double cold_ms = worst_mean_cold * batch / 1000.0, warm_ms = worst_mean_warm * batch / 1000.0;
    const double check_ms = worst_mean_check * batch / 1000.0;
    fmt::print("decode step at batch {}: {:.2f} ms\n", batch, step_ms);
    fmt::print(
        "mask for {} sequences, one after another (worst schema): cold {:.2f} ms = {:.1f} % of the step, "
        "warm {:.2f} ms = {:.1f} %\n",
        batch, cold_ms, 100.0 * cold_ms / step_ms, warm_ms, 100.0 * warm_ms / step_ms);
    fmt::print("draw checked first, allowed (no mask): {:.2f} ms = {:.2f} % of the step\n", check_ms,
               100.0 * check_ms / step_ms);
  }
  return 0;
}
