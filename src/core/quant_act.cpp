// quantize_act_row: per-32 absmax int8 quantization of activation rows.
#include "core/quant_act.h"

#include <cmath>

namespace cai {

void quantize_act_row(const float* x, int64_t n, ActBlockQ8* out) {
  for (int64_t b = 0; b < n / kActBlock; ++b) {
    const float* v = x + b * kActBlock;
    float amax = 0.0f;
    for (int i = 0; i < kActBlock; ++i) amax = std::fmax(amax, std::fabs(v[i]));
    ActBlockQ8& blk = out[b];
    blk.d = amax / 127.0f;
    const float inv = amax > 0.0f ? 127.0f / amax : 0.0f;
    int sums[2] = {0, 0};
    for (int i = 0; i < kActBlock; ++i) {
      const int q = static_cast<int>(std::nearbyint(v[i] * inv));  // default rounding: to nearest, ties to even
      blk.q[i] = static_cast<int8_t>(q);
      sums[i / 16] += q;
    }
    blk.sum[0] = static_cast<int16_t>(sums[0]);
    blk.sum[1] = static_cast<int16_t>(sums[1]);
  }
}

}  // namespace cai
