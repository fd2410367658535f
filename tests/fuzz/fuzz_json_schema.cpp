// libFuzzer target: arbitrary bytes as a JSON Schema for structured output. A schema the compiler accepts must give
// a grammar whose token masks agree with the automaton: on a small vocabulary (every byte plus a few words), walking
// the first allowed token each step never reaches a dead state, and a walk the grammar calls complete matches.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "runtime/grammar/sequence_grammar.h"

namespace {

std::shared_ptr<const cai::grammar::TokenVocabulary> vocabulary() {
  std::vector<std::string> tokens{""};  // token 0: the end token
  for (int b = 1; b < 256; ++b) tokens.emplace_back(1, static_cast<char>(b));
  for (const char* w : {"\": ", "\", \"", "true", "null", "{\"", "\"}", "[1, ", "]}", "abc", "\xC3\xA9"})
    tokens.emplace_back(w);
  return std::make_shared<const cai::grammar::TokenVocabulary>(tokens, std::vector<int32_t>{0});
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static const auto vocab = vocabulary();
  const auto schema = nlohmann::ordered_json::parse(data, data + size, nullptr, /*allow_exceptions=*/false);
  if (schema.is_discarded()) return 0;
  cai::Result<cai::grammar::Grammar> g = cai::grammar::Grammar::json_schema(schema);
  if (!g.ok()) {
    if (g.status().message().empty()) std::abort();  // refusals explain themselves
    return 0;
  }
  auto masker = cai::grammar::make_token_masker(g.value(), /*after_reasoning=*/false, vocab);
  int32_t state = masker->start();
  std::string text;
  // Alternate between the first and the last allowed token so that both ends of the alphabet are explored.
  for (int step = 0; step < 64 && !masker->finished(state); ++step) {
    const auto mask = masker->allowed(state);
    std::vector<int32_t> allowed;
    for (int32_t t = 0; t < vocab->size(); ++t)
      if (((*mask)[static_cast<size_t>(t) / 64] >> (t % 64)) & 1) allowed.push_back(t);
    if (allowed.empty()) break;  // the vocabulary cannot go on (not a bug: e.g. a 64-step cap)
    const int32_t token = step % 2 ? allowed.back() : allowed.front();
    if (vocab->is_end(token)) {
      if (!masker->accepting(state)) std::abort();  // the end token is offered only when complete
      break;
    }
    state = masker->advance(state, token);
    if (state < 0) std::abort();  // an allowed token must be accepted
    text += vocab->bytes(token);
  }
  if (masker->accepting(state) && !g.value().matches(text)) std::abort();
  return 0;
}
