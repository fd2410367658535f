// Chained block hashing for the prefix cache.
#include "runtime/kv/block_hash.h"

namespace cai {
namespace {

// A bijective avalanche of 64 bits (xor-shift / odd-multiply rounds).
uint64_t mix64(uint64_t x) {
  x ^= x >> 30;
  x *= 0xbf58476d1ce4e5b9ULL;
  x ^= x >> 27;
  x *= 0x94d049bb133111ebULL;
  x ^= x >> 31;
  return x;
}

constexpr uint64_t kGolden = 0x9e3779b97f4a7c15ULL;

}  // namespace

BlockHash hash_block(BlockHash parent, std::span<const int32_t> tokens, uint64_t seed) {
  uint64_t h = mix64(parent ^ mix64(seed + kGolden));
  for (int32_t t : tokens) h = mix64(h + kGolden * (uint64_t(uint32_t(t)) + 1));
  return mix64(h ^ uint64_t(tokens.size()));
}

}  // namespace cai
