// quantize_act_row(_q16): per-32 absmax int8 / int16 quantization of activation rows.
#include "core/quant_act.h"

#include <cmath>

namespace cai {

namespace {

// One block: d = amax / kMax, q = round-half-even(x / d), and the half sums Σ q of 0..15 and 16..31.
template <int kMax, class Code>
void quantize_block(const float* v, Code* q, float& d, int sums[2]) {
  float amax = 0.0f;
  for (int i = 0; i < kActBlock; ++i) amax = std::fmax(amax, std::fabs(v[i]));
  d = amax / static_cast<float>(kMax);
  const float inv = amax > 0.0f ? static_cast<float>(kMax) / amax : 0.0f;
  sums[0] = sums[1] = 0;
  for (int i = 0; i < kActBlock; ++i) {
    const int c = static_cast<int>(std::nearbyint(v[i] * inv));  // default rounding: to nearest, ties to even
    q[i] = static_cast<Code>(c);
    sums[i / 16] += c;
  }
}

}  // namespace

void quantize_act_row(const float* x, int64_t n, ActBlockQ8* out) {
  for (int64_t b = 0; b < n / kActBlock; ++b) {
    int sums[2];
    quantize_block<127>(x + b * kActBlock, out[b].q, out[b].d, sums);
    set_act_block_sums(out[b], sums[0], sums[1]);
  }
}

void quantize_act_row_q16(const float* x, int64_t n, ActBlockQ16* out, float* d) {
  for (int64_t b = 0; b < n / kActBlock; ++b) {
    int sums[2];
    quantize_block<32767>(x + b * kActBlock, out[b].q, d[b], sums);
  }
}

}  // namespace cai
