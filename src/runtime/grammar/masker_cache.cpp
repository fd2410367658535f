// MaskerCache: weak references to the maskers in use, dropped once their last request ends.
#include "runtime/grammar/masker_cache.h"

namespace cai::grammar {

std::shared_ptr<TokenMasker> MaskerCache::get(const Grammar& g, bool after_reasoning, const Tokenizer& tokenizer) {
  if (!vocab_) vocab_ = std::make_shared<const TokenVocabulary>(tokenizer);
  std::erase_if(live_, [](const auto& kv) { return kv.second.masker.expired(); });
  const auto key = std::make_pair(g.root().get(), after_reasoning);
  if (auto it = live_.find(key); it != live_.end() && it->second.root.lock() == g.root())
    if (std::shared_ptr<TokenMasker> m = it->second.masker.lock()) return m;
  std::shared_ptr<TokenMasker> m = make_token_masker(g, after_reasoning, vocab_);
  live_[key] = Entry{g.root(), m};
  return m;
}

}  // namespace cai::grammar
