// MaskerCache: the engine's TokenMaskers, one per grammar while a request uses it, so that requests sharing a grammar
// (the server caches compiled schemas) share its DFA and cached masks; the vocabulary index is built once.
#pragma once

#include <map>
#include <memory>
#include <utility>

#include "runtime/grammar/sequence_grammar.h"

namespace cai {
class Tokenizer;
}

namespace cai::grammar {

class MaskerCache {
 public:
  // The masker of `g` (see make_token_masker), shared with the live requests that use the same grammar. Not
  // thread-safe (the engine thread calls it).
  std::shared_ptr<TokenMasker> get(const Grammar& g, bool after_reasoning, const Tokenizer& tokenizer);

 private:
  struct Entry {
    std::weak_ptr<const Node> root;  // the key's grammar, to tell a reused address from the same grammar
    std::weak_ptr<TokenMasker> masker;
  };
  std::shared_ptr<const TokenVocabulary> vocab_;
  std::map<std::pair<const Node*, bool>, Entry> live_;
};

}  // namespace cai::grammar
