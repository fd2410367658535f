// CPU RoPE: rotates pairs of each head in place (NORM: adjacent pairs, NEOX: split halves).
#include <cmath>
#include <vector>

#include "hal/cpu/kernels/kernels.h"

namespace cai::hal::cpu {

Status rope(const OpContext& ctx, const TensorView& x, const TensorView& pos_view, const TensorView& inv_freq_view,
            const RopeParams& p) {
  if (x.n_dims != 3 || x.dtype != DType::kF32) return invalid_argument("rope: x must be F32 [n_tok, n_head, head_dim]");
  const int64_t n_tok = x.dim(0), n_head = x.dim(1), head_dim = x.dim(2);
  if (p.n_rot <= 0 || p.rot_offset < 0 || p.rot_offset + p.n_rot > head_dim || p.n_rot % 2)
    return invalid_argument("rope: n_rot {} invalid for head_dim {}", p.n_rot, head_dim);
  const int32_t* pos = pos_view.as<const int32_t>();
  const float* inv_freq = inv_freq_view.as<const float>();
  const int half = p.n_rot / 2;
  parallel_rows(ctx, n_tok, 1, [&](int64_t b, int64_t e) {
    std::vector<float> cos_t(static_cast<size_t>(half)), sin_t(static_cast<size_t>(half));
    for (int64_t t = b; t < e; ++t) {
      for (int i = 0; i < half; ++i) {
        const float angle = static_cast<float>(pos[t]) * inv_freq[i];
        cos_t[static_cast<size_t>(i)] = std::cos(angle) * p.mscale;
        sin_t[static_cast<size_t>(i)] = std::sin(angle) * p.mscale;
      }
      for (int64_t h = 0; h < n_head; ++h) {
        float* v = x.as<float>() + (t * n_head + h) * head_dim + p.rot_offset;
        for (int i = 0; i < half; ++i) {
          const int i0 = p.style == RopeStyle::kNorm ? 2 * i : i;
          const int i1 = p.style == RopeStyle::kNorm ? 2 * i + 1 : i + half;
          const float a = v[i0], c = v[i1];
          v[i0] = a * cos_t[static_cast<size_t>(i)] - c * sin_t[static_cast<size_t>(i)];
          v[i1] = a * sin_t[static_cast<size_t>(i)] + c * cos_t[static_cast<size_t>(i)];
        }
      }
    }
  });
  return {};
}

}  // namespace cai::hal::cpu
