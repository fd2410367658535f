// Token masks: which tokens of a vocabulary may come next under a grammar. TokenVocabulary holds the tokens' bytes
// sorted so that shared prefixes are walked once; TokenMasker pairs it with a grammar's lazy DFA and caches the
// allowed-token bitset per DFA state.
#pragma once

#include <cstdint>
#include <memory>
#include <mutex>
#include <span>
#include <string>
#include <unordered_map>
#include <vector>

#include "runtime/grammar/byte_dfa.h"
#include "runtime/grammar/grammar.h"

namespace cai {
class Tokenizer;
}

namespace cai::grammar {

class TokenVocabulary {
 public:
  // Every token's bytes as the detokenizer writes them after earlier text; control tokens have none and are never
  // allowed, end-of-generation tokens are allowed where the grammar is complete.
  explicit TokenVocabulary(const Tokenizer& tokenizer);
  // For tests: token i has the bytes token_bytes[i]; `end_tokens` end generation.
  TokenVocabulary(std::vector<std::string> token_bytes, std::vector<int32_t> end_tokens);

  int32_t size() const { return static_cast<int32_t>(bytes_.size()); }
  const std::string& bytes(int32_t token) const { return bytes_[static_cast<size_t>(token)]; }
  bool is_end(int32_t token) const;
  const std::vector<int32_t>& end_tokens() const { return end_; }

 private:
  friend class TokenMasker;
  void index();

  std::vector<std::string> bytes_;
  std::vector<int32_t> end_;              // sorted
  std::vector<int32_t> sorted_;           // ids of tokens with bytes, in byte order
  std::vector<uint16_t> shared_;          // bytes sorted_[i] shares with sorted_[i - 1] (0 for i = 0)
  std::string sorted_bytes_;              // the bytes of sorted_[0], sorted_[1], ... back to back (read in order)
  std::vector<uint32_t> sorted_offsets_;  // where each starts in sorted_bytes_; one more at the end
};

using TokenBitset = std::vector<uint64_t>;  // bit t set: token t allowed

// One grammar over one vocabulary. Thread-safe; shared by the choices of a request.
class TokenMasker {
 public:
  // Most cached bitsets (about 19 KB each at 150k tokens); the cache is emptied when full.
  static constexpr size_t kMaxCachedMasks = 256;

  // `program`: compile_program of the grammar.
  TokenMasker(Program program, std::shared_ptr<const TokenVocabulary> vocab);

  int32_t start() const { return 0; }
  // The tokens allowed in DFA `state`.
  std::shared_ptr<const TokenBitset> allowed(int32_t state);
  // Sets the logits of the tokens not allowed in `state` to -inf (when none is allowed, every end token is let
  // through so that the sequence can end).
  void apply(int32_t state, std::span<float> logits);
  // Whether `token` may come next in `state` (as allowed() says, without computing the whole mask).
  bool allows(int32_t state, int32_t token) { return advance(state, token) != ByteDfa::kDead; }
  // The state after `token`'s bytes (ByteDfa::kDead when not allowed).
  int32_t advance(int32_t state, int32_t token);
  // The state after `bytes`.
  int32_t advance_bytes(int32_t state, std::string_view bytes);
  // Some token (or the end, for an empty language) is allowed in the start state: false when the vocabulary cannot
  // write any text of the language.
  bool can_start();
  bool accepting(int32_t state);
  bool finished(int32_t state);
  const TokenVocabulary& vocabulary() const { return *vocab_; }

 private:
  std::shared_ptr<const TokenBitset> compute(int32_t state);  // with mu_ held
  int32_t walk(int32_t state, std::string_view bytes);        // with mu_ held

  // The vocabulary's tokens as strings of byte classes (bytes that every edge of the grammar treats alike, written
  // as the class's first byte), sorted so that tokens of one class string are walked once.
  struct ClassIndex {
    std::vector<int32_t> order;     // token ids in class-string order
    std::vector<uint16_t> shared;   // class bytes order[i] shares with order[i - 1]
    std::string bytes;              // the class strings back to back
    std::vector<uint32_t> offsets;  // where each starts in `bytes`; one more at the end
  };
  static ClassIndex index_classes(const Program& program, const TokenVocabulary& vocab);

  std::mutex mu_;
  ClassIndex classes_;
  ByteDfa dfa_;
  std::shared_ptr<const TokenVocabulary> vocab_;
  std::unordered_map<int32_t, std::shared_ptr<const TokenBitset>> cache_;
};

}  // namespace cai::grammar
