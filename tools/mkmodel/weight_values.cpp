// Counter-based random weight values: element i of weight W is a hash of (seed, W's name, i), shaped normal-ish.
#include <string_view>

#include "model_spec.h"

namespace cai::mkmodel {
namespace {

constexpr float kStd = 0.02f;

uint64_t mix64(uint64_t z) {  // the splitmix64 finaliser
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
  return z ^ (z >> 31);
}

uint64_t name_hash(std::string_view s) {  // FNV-1a
  uint64_t h = 0xCBF29CE484222325ULL;
  for (unsigned char c : s) h = (h ^ c) * 0x100000001B3ULL;
  return h;
}

// Sum of four 16-bit uniforms (Irwin–Hall, n = 4), centred and scaled to unit variance: bounded to ±3.46,
// smooth enough for weights and cheap (one hash per element).
float unit_normalish(uint64_t bits) {
  const uint32_t s = static_cast<uint32_t>(bits & 0xFFFF) + static_cast<uint32_t>((bits >> 16) & 0xFFFF) +
                     static_cast<uint32_t>((bits >> 32) & 0xFFFF) + static_cast<uint32_t>(bits >> 48);
  constexpr float kMean = 4.0f * 65535.0f / 2.0f;
  constexpr float kInvStd = 1.0f / 37837.22f;  // sqrt(4 · (65536² − 1) / 12)
  return (static_cast<float>(s) - kMean) * kInvStd;
}

}  // namespace

WeightValues::WeightValues(const WeightSpec& w, uint64_t seed)
    : key_(mix64(seed * 0x9E3779B97F4A7C15ULL ^ name_hash(w.name))), init_(w.init),
      cols_(w.shape.empty() ? 1 : w.shape.back()), overrides_(w.overrides) {}

float WeightValues::at(int64_t index) const {
  const float n = unit_normalish(mix64(key_ + static_cast<uint64_t>(index) * 0xD1B54A32D192ED03ULL));
  return init_ == Init::kNormWeight ? 1.0f + kStd * n : kStd * n;
}

void WeightValues::row(int64_t r, float* dst) const {
  const int64_t base = r * cols_;
  for (int64_t c = 0; c < cols_; ++c) dst[c] = at(base + c);
  if (!overrides_) return;
  if (auto it = overrides_->find(r); it != overrides_->end())
    for (const auto& [c, v] : it->second) dst[c] = v;
}

}  // namespace cai::mkmodel
